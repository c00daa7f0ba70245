//! The terminal's settings as the run found them, put back when the run is interrupted.
//!
//! A passphrase prompt switches echo off while it reads; SIGINT during that read leaves the
//! reading thread blocked and the terminal without echo. The interrupt path restores the saved
//! settings and does not wait for that thread.

/// The settings of the controlling terminal (standard input or error), when there is one.
pub struct Saved {
    fd: i32,
    termios: Option<libc::termios>,
}

impl Saved {
    pub fn capture() -> Saved {
        for fd in [libc::STDIN_FILENO, libc::STDERR_FILENO] {
            // SAFETY: isatty and tcgetattr only read the descriptor's state into `t`, which is
            // plain data owned here.
            unsafe {
                if libc::isatty(fd) == 1 {
                    let mut t: libc::termios = std::mem::zeroed();
                    if libc::tcgetattr(fd, &mut t) == 0 {
                        return Saved {
                            fd,
                            termios: Some(t),
                        };
                    }
                }
            }
        }
        Saved {
            fd: -1,
            termios: None,
        }
    }

    pub fn restore(&self) {
        if let Some(t) = &self.termios {
            // SAFETY: `t` came from tcgetattr on the same descriptor, still open (0 or 2).
            unsafe {
                libc::tcsetattr(self.fd, libc::TCSANOW, t);
            }
        }
    }
}
