//! The `dsh` binary: a thin command-line layer over the `dsh` library.

mod cli;

fn main() -> std::process::ExitCode {
    // A bug must still end in one clear line and a stable status, never a
    // stack trace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("dsh: internal error: {msg}{at} (please report this)");
        std::process::exit(70);
    }));
    // Give freed memory back within a millisecond: peak RSS should follow the
    // surface, not pages the allocator keeps for reuse. (0 saves another ~3 MB
    // on a 100 MB log but costs a third more time in madvise calls.)
    // SAFETY: sets a process-wide allocator option; any value is valid.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1) };
    cli::run()
}

/// `mi_option_purge_delay` in mimalloc's option enum (milliseconds).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

// The loader parses on one thread and folds on another; mimalloc keeps the
// many small allocations of JSON values cheap on both.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
