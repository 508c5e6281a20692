//! The one door to standard output. Every byte a command prints goes through
//! [`Out`], which turns a reader that went away (`dsh … | head -1`, EPIPE)
//! into silence: later writes are dropped and the command ends with the exit
//! status it would have had with its whole output read.

use std::fmt;
use std::io::{self, IoSlice, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::escape::Filter;
use super::pager::Pager;

/// Standard output for one command run.
#[derive(Default)]
pub struct Out {
    closed: AtomicBool,
    paging: Mutex<Paging>,
    /// Bytes for programs (JSON, a log, an artifact): not escaped.
    bytes: AtomicBool,
    /// The escaping rule's door (see [`super::escape`]).
    filter: Mutex<Filter>,
}

/// Where long output stands with the pager.
#[derive(Default)]
enum Paging {
    /// Straight to standard output.
    #[default]
    Off,
    /// Held back until it outgrows a screen of `rows` lines: output that
    /// fits is printed as it is, and no pager ever starts for it.
    Holding {
        rows: usize,
        lines: usize,
        held: Vec<u8>,
    },
    /// Going through the pager.
    On(Pager),
}

impl Out {
    /// A fresh door; nothing is opened until the first write.
    pub fn new() -> Out {
        Out::default()
    }

    /// What this run prints is meant for programs (JSON, a log's bytes, an
    /// artifact): it passes as it is, without the escaping rule of human
    /// output (JSON escapes control characters itself).
    pub fn set_bytes(&self) {
        self.bytes.store(true, Ordering::Relaxed);
    }

    /// Whether text through this door is escaped ([`super::escape`]):
    /// unless it carries bytes for programs or `--raw` was given.
    fn escaping(&self) -> bool {
        !self.bytes.load(Ordering::Relaxed) && !super::escape::raw()
    }

    /// Page the rest of this run's output once it is longer than the
    /// terminal (standard output a terminal of known height, a pager asked
    /// for; see [`super::pager`]).
    pub fn page_when_long(&self) {
        let Some(rows) = super::pager::screen_rows() else {
            return;
        };
        let mut p = self.paging.lock().unwrap();
        if matches!(*p, Paging::Off) {
            *p = Paging::Holding {
                rows,
                lines: 0,
                held: Vec::new(),
            };
        }
    }

    /// End of the run: print what is still held, or hand the pager the
    /// end of the text and wait until the user leaves it.
    pub fn finish(&self) {
        let state = std::mem::take(&mut *self.paging.lock().unwrap());
        match state {
            Paging::Off => {}
            Paging::Holding { held, .. } => {
                let mut w = io::stdout().lock();
                let r = w.write_all(&held).and_then(|()| w.flush());
                let _ = self.absorb(r, ());
            }
            Paging::On(pager) => pager.finish(),
        }
    }

    /// Take `buf` into the held output when output is being held; `true`
    /// when it was taken. Starts the pager (and passes it everything held)
    /// once the output outgrows the screen.
    fn hold(&self, buf: &[u8]) -> io::Result<bool> {
        let mut p = self.paging.lock().unwrap();
        let Paging::Holding { rows, lines, held } = &mut *p else {
            return Ok(false);
        };
        held.extend_from_slice(buf);
        *lines += memchr::memchr_iter(b'\n', buf).count();
        if *lines < *rows {
            return Ok(true);
        }
        let held = std::mem::take(held);
        *p = match super::pager::start() {
            Some(pager) => Paging::On(pager),
            None => Paging::Off,
        };
        drop(p);
        let mut w = io::stdout().lock();
        w.write_all(&held)?;
        w.flush()?;
        Ok(true)
    }

    /// Whether the reader closed the pipe (nothing more will be shown).
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Print formatted text.
    pub fn print(&self, args: fmt::Arguments<'_>) -> io::Result<()> {
        let mut w = self.stream();
        w.write_fmt(args)?;
        w.flush()
    }

    /// Print formatted text and a newline. On a terminal, prose wider than
    /// it is word-wrapped (tables arrive already fitted).
    pub fn line(&self, args: fmt::Arguments<'_>) -> io::Result<()> {
        let mut w = self.stream();
        match super::width() {
            Some(width) => {
                let text = args.to_string();
                for l in text.split('\n') {
                    w.write_all(super::wrap(l, width).as_bytes())?;
                    w.write_all(b"\n")?;
                }
            }
            None => {
                w.write_fmt(args)?;
                w.write_all(b"\n")?;
            }
        }
        w.flush()
    }

    /// Print a report of text lines; on a terminal, lines wider than it
    /// are word-wrapped.
    pub fn text(&self, s: &str) -> io::Result<()> {
        let Some(width) = super::width() else {
            return self.write_all(s.as_bytes());
        };
        let mut w = self.stream();
        for (i, l) in s.split('\n').enumerate() {
            if i > 0 {
                w.write_all(b"\n")?;
            }
            w.write_all(super::wrap(l, width).as_bytes())?;
        }
        w.flush()
    }

    /// Print bytes as they are.
    pub fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let mut w = self.stream();
        w.write_all(bytes)?;
        w.flush()
    }

    /// A buffered writer on standard output for long streams; flush it at the end.
    pub fn stream(&self) -> Guarded<'_, io::BufWriter<io::StdoutLock<'static>>> {
        Guarded {
            out: self,
            inner: io::BufWriter::with_capacity(1 << 16, io::stdout().lock()),
        }
    }

    /// An unbuffered writer on the file descriptor itself, for large
    /// vectored writes (see [`super::super::ctx::raw_stdout`]).
    pub fn raw(&self) -> Guarded<'_, Box<dyn Write>> {
        Guarded {
            out: self,
            inner: super::super::ctx::raw_stdout(),
        }
    }

    /// Note a write result: a broken pipe closes the door and counts as done.
    fn absorb<T>(&self, r: io::Result<T>, done: T) -> io::Result<T> {
        match r {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed.store(true, Ordering::Relaxed);
                Ok(done)
            }
            other => other,
        }
    }
}

/// dsh's own terminal controls, for a live view that redraws itself
/// (`dsh watch`): the door would show them as text, so [`Out::control`]
/// writes them past it — these, and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Cursor to the top left, screen cleared.
    Home,
    /// Hide the cursor.
    HideCursor,
    /// Show the cursor again.
    ShowCursor,
}

impl Out {
    /// Write one of dsh's own terminal controls, after what the door still
    /// holds.
    pub fn control(&self, c: Control) -> io::Result<()> {
        let seq: &[u8] = match c {
            Control::Home => b"\x1b[H\x1b[2J",
            Control::HideCursor => b"\x1b[?25l",
            Control::ShowCursor => b"\x1b[?25h",
        };
        let mut w = self.stream();
        w.flush()?;
        w.send_all(seq)?;
        w.flush()
    }
}

/// A writer that drops everything once the reader has gone away.
pub struct Guarded<'a, W: Write> {
    out: &'a Out,
    inner: W,
}

impl<W: Write> Guarded<'_, W> {
    /// Write bytes that already passed the door, all of them.
    fn send_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() && !self.out.closed() {
            match self.send(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn send(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.out.hold(buf) {
            Ok(true) => return Ok(buf.len()),
            Ok(false) => {}
            Err(e) => return self.out.absorb(Err(e), buf.len()),
        }
        let r = self.inner.write(buf);
        self.out.absorb(r, buf.len())
    }
}

impl<W: Write> Write for Guarded<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.out.closed() {
            return Ok(buf.len());
        }
        if !self.out.escaping() {
            return self.send(buf);
        }
        let passed = self
            .out
            .filter
            .lock()
            .unwrap()
            .pass(buf, super::color::on());
        self.send_all(&passed)?;
        Ok(buf.len())
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let total = bufs.iter().map(|b| b.len()).sum();
        if self.out.closed() {
            return Ok(total);
        }
        if self.out.escaping()
            || !matches!(
                *self.out.paging.lock().unwrap(),
                Paging::Off | Paging::On(_)
            )
        {
            for b in bufs {
                self.write_all(b)?;
            }
            return Ok(total);
        }
        let r = self.inner.write_vectored(bufs);
        self.out.absorb(r, total)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.out.closed() {
            return Ok(());
        }
        let held = self.out.filter.lock().unwrap().finish();
        self.send_all(&held)?;
        let r = self.inner.flush();
        self.out.absorb(r, ())
    }
}

impl<W: Write> Drop for Guarded<'_, W> {
    fn drop(&mut self) {
        // A BufWriter flushes on drop and ignores the error; flushing here
        // first records a broken pipe instead.
        let _ = self.flush();
    }
}

/// `outln!(out, "fmt", args…)`: a line through an [`Out`]; an `io::Result`.
macro_rules! outln {
    ($out:expr) => {
        $out.line(format_args!(""))
    };
    ($out:expr, $($arg:tt)*) => {
        $out.line(format_args!($($arg)*))
    };
}

/// `outp!(out, "fmt", args…)`: text without a newline through an [`Out`].
macro_rules! outp {
    ($out:expr, $($arg:tt)*) => {
        $out.print(format_args!($($arg)*))
    };
}

pub(crate) use {outln, outp};
