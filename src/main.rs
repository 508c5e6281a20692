//! The `dsh` binary: a thin command-line layer over the `dsh` library.

// Writing to standard error must never abort the process (a full or
// closed stderr, `2>/dev/full`): these shadow std's macros in every module
// below and drop a failed write, where std's would panic. What they print
// passes the escaping rule (`cli::render::escape`): an error quoting a path
// or a provider's message never drives the terminal.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let s = format!($($arg)*);
        let _ = writeln!(std::io::stderr(), "{}", crate::cli::render::escape::stderr(&s));
    }};
}
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let s = format!($($arg)*);
        let _ = write!(std::io::stderr(), "{}", crate::cli::render::escape::stderr(&s));
    }};
}

mod cli;

fn main() -> std::process::ExitCode {
    ignore_file_size_signal();
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
    cli::run()
}

/// Past a file size limit (`ulimit -f`), a write must fail with `EFBIG`
/// and be rolled back like a full disk, instead of SIGXFSZ killing the
/// process mid-write and leaving a torn tail.
fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to SIG_IGN touches no Rust
    // state and is valid at any time.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Allocator options, set before anything allocates: mimalloc reads some of
/// them when it creates its first arena, which happens before `main`.
/// - commit arena memory as it is used, not up front (saves ~6 MB of RSS);
/// - give freed pages back after 1 ms, so peak RSS follows the surface, not
///   pages kept for reuse (0 saves another ~3 MB on a 100 MB log but costs a
///   quarter more time in madvise calls).
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static ALLOCATOR_OPTIONS: extern "C" fn() = {
    extern "C" fn set() {
        // SAFETY: plain option stores; valid for any value and at any time.
        unsafe {
            libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1);
        }
    }
    set
};

/// Many logs at a time (a whole home): freed pages are kept for 50 ms
/// instead of 1, since each small log's buffers are freed and asked for
/// again at once; giving them back each time costs a page fault per page
/// (a quarter of the time over a home of small sessions). Memory stays
/// bounded by the logs in flight.
pub(crate) fn keep_freed_pages_longer() {
    keep_freed_pages_ms(50);
}

/// One plain log: freed pages are kept for 10 ms instead of 1. Its reader
/// maps the file and frees each batch's values as the fold moves on; pages
/// given back at once are faulted in again a moment later (2 to 3% of
/// `verify`'s and `prune`'s time on a 100 MB log) for about 1 MB less peak
/// RSS. An artifact keeps 1 ms: its peak RSS is bounded against the size of
/// its plaintext, and `messages` on one would come close to the bound.
pub(crate) fn keep_freed_pages_for(src: &dsh::LogSource) {
    if src.is_plain_file() {
        keep_freed_pages_ms(10);
    }
}

/// Keep freed pages `ms` milliseconds before giving them back to the
/// system (mimalloc reads the option whenever it purges).
fn keep_freed_pages_ms(ms: std::ffi::c_long) {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain option store; valid for any value and at any time.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = ms;
}

/// `mi_option_arena_eager_commit` in mimalloc's option enum.
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
/// `mi_option_purge_delay` in mimalloc's option enum (milliseconds).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

// The loader parses on one thread and folds on another; mimalloc keeps the
// many small allocations of JSON values cheap on both.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
