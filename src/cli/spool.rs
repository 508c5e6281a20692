//! Standard input — or a pipe or character device named as a file (`<(cmd)`,
//! a FIFO) — for commands that read a log twice (`events` marks what the
//! final surface shadows; `measure` and `compact` read again when step
//! labels repeat): the stream is copied once into an unnamed temporary file
//! and read from there.

use std::io::{self, Read, Write};

use dsh::LogSource;

/// Copy standard input into a temporary file that is deleted when the
/// returned handle drops, and name it as the source to read.
///
/// The copy stops once one line runs past `max_line_bytes` without a
/// newline: the loader then refuses that line at the limit exactly as it
/// does when streaming, and `dsh events - < /dev/zero` cannot fill the disk.
pub fn stdin(max_line_bytes: u64) -> io::Result<(tempfile::NamedTempFile, LogSource)> {
    stream(&mut io::stdin().lock(), max_line_bytes)
}

/// [`stdin`] for a pipe or device named by `path`.
pub fn named(
    path: &std::path::Path,
    max_line_bytes: u64,
) -> io::Result<(tempfile::NamedTempFile, LogSource)> {
    stream(&mut std::fs::File::open(path)?, max_line_bytes)
}

fn stream(
    input: &mut dyn Read,
    max_line_bytes: u64,
) -> io::Result<(tempfile::NamedTempFile, LogSource)> {
    let mut spool = tempfile::Builder::new()
        .prefix("dsh-stdin-")
        .suffix(".jsonl")
        .tempfile()?;
    let mut buf = vec![0u8; 1 << 20];
    let mut since_newline: u64 = 0;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        spool.write_all(chunk)?;
        since_newline = match memchr::memrchr(b'\n', chunk) {
            Some(i) => (n - i - 1) as u64,
            None => since_newline + n as u64,
        };
        if since_newline > max_line_bytes {
            break;
        }
    }
    spool.flush()?;
    let path = spool.path().to_path_buf();
    Ok((spool, LogSource::Spooled(path)))
}
