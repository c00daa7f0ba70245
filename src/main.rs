fn main() -> std::process::ExitCode {
    if STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) {
        rkers::output::stdout_was_closed();
    }
    rkers::cli::main()
}

/// Whether descriptor 1 was closed when the process was started (`rkers ... >&-`). Rust's
/// runtime opens `/dev/null` on a closed standard descriptor before `main`, where a command's
/// product would be lost with exit 0; this is read before, by an ELF constructor.
#[cfg(target_os = "linux")]
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static RECORD_STDOUT: extern "C" fn() = record_stdout;

#[cfg(target_os = "linux")]
extern "C" fn record_stdout() {
    // SAFETY: F_GETFD only reads the descriptor's flags; -1 (EBADF) means it is not open.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(not(target_os = "linux"))]
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);
