//! The one way tick runs async code: one current-thread tokio runtime per thread that does
//! async work, with I/O and timers on, made on the thread's first [`block_on`] and kept until
//! the thread ends. The engine on that thread (the main thread for a subcommand, the worker
//! thread for the session) lives no longer than its thread, so it never outlives its runtime.
//!
//! Why one, not one per call: a model client keeps connections in a pool, and each connection
//! is driven by a task on the runtime it was opened on. A runtime per call drops those tasks
//! with it, so the next call on a new runtime cannot reuse the connection and opens another
//! (reqwest's maintainers warn against sharing a client across runtimes). With one runtime a
//! thread's calls, planning and running alike, share its connections.

use std::cell::OnceCell;
use std::future::Future;

use crate::error::{Error, Result};

thread_local! {
    static RUNTIME: OnceCell<tokio::runtime::Runtime> = const { OnceCell::new() };
}

/// Runs `future` to its end on this thread's runtime. Not from inside async code that runs on
/// it (tokio refuses a runtime within a runtime).
pub fn block_on<F: Future>(future: F) -> Result<F::Output> {
    RUNTIME.with(|cell| {
        if cell.get().is_none() {
            let _ = cell.set(build()?);
        }
        let runtime = cell
            .get()
            .ok_or_else(|| Error::internal("the async runtime is gone"))?;
        Ok(runtime.block_on(future))
    })
}

fn build() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::internal(format!("could not start the async runtime: {err}")))
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

    #[test]
    fn a_thread_keeps_one_runtime_across_calls() {
        let first = super::block_on(async { tokio::runtime::Handle::current().id() }).unwrap();
        let second = super::block_on(async { tokio::runtime::Handle::current().id() }).unwrap();
        assert_eq!(first, second);
        let other = std::thread::spawn(|| {
            super::block_on(async { tokio::runtime::Handle::current().id() }).unwrap()
        })
        .join()
        .unwrap();
        assert_ne!(first, other);
    }
}
