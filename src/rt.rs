//! The one way tick gets an async runtime: a current-thread tokio runtime for the thread that
//! asks, with I/O and timers on. Any plain thread may build one (the interactive session drives
//! the runner and the planner from worker threads); async code runs on it with `block_on`.

use std::future::Future;

use crate::error::{Error, Result};

/// A runtime for this thread, to hold while it is needed (a runner keeps one for its life).
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::internal(format!("could not start the async runtime: {err}")))
}

/// Runs `future` to its end on a runtime of its own, on this thread.
pub fn block_on<F: Future>(future: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(future))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_plain_thread_runs_async_code() {
        let answer = std::thread::spawn(|| {
            super::block_on(async {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                42
            })
        })
        .join()
        .unwrap()
        .unwrap();
        assert_eq!(answer, 42);
    }
}
