//! The worker thread: runs one engine request at a time off the UI thread, and sends what
//! happens back over the session's channel. Questions for the person travel the same way,
//! with a channel of their own for the answer; the worker waits for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};

use crate::error::Error;
use crate::plan::StepId;
use crate::tools::Questions;

use super::app::Request;
use super::seam::{Engine, EngineEvent, Outcome, Person};

/// What reaches the UI loop.
#[derive(Debug)]
pub enum Msg {
    Engine(EngineEvent),
    Questions(Questions, Sender<Option<String>>),
    Deviation(StepId, Vec<String>, Sender<bool>),
    /// The request ended, with what it did.
    Done(Request, Result<Outcome, Error>),
    /// A line something printed to stdout or stderr while the session runs (nothing should:
    /// the guard of `terminal.rs` catches it), shown as unexpected output.
    Output(String),
}

pub struct Worker {
    requests: Sender<Request>,
    /// Set to stop a run at the next safe point; cleared before each request.
    pub stop: Arc<AtomicBool>,
}

impl Worker {
    pub fn start(engine: Arc<dyn Engine>, out: Sender<Msg>) -> std::io::Result<Worker> {
        let (requests, incoming) = channel::<Request>();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("tick-session-worker".to_owned())
            .spawn(move || {
                for request in incoming {
                    flag.store(false, Ordering::SeqCst);
                    let mut person = ChannelPerson { out: out.clone() };
                    // A bug in the engine is an error in the timeline, not a dead session.
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        serve(engine.as_ref(), &request, &mut person, &flag)
                    }))
                    .unwrap_or_else(|_| {
                        Err(Error::internal("tick's engine failed (a panic; its message is above)")
                            .hint("this is a bug in tick; the files are as the last atomic write left them"))
                    });
                    if out.send(Msg::Done(request, result)).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Worker { requests, stop })
    }

    pub fn send(&self, request: Request) -> bool {
        self.requests.send(request).is_ok()
    }
}

fn serve(
    engine: &dyn Engine,
    request: &Request,
    person: &mut ChannelPerson,
    stop: &Arc<AtomicBool>,
) -> Result<Outcome, Error> {
    let out = person.out.clone();
    let mut events = move |event: EngineEvent| {
        let _ = out.send(Msg::Engine(event));
    };
    carry_out(engine, request, person, &mut events, stop)
}

/// Carries out one request of the session with `engine`: what the worker does, on whichever
/// thread calls it (the tests call it on theirs, with a person of their own).
pub fn carry_out(
    engine: &dyn Engine,
    request: &Request,
    person: &mut dyn Person,
    events: &mut (dyn FnMut(EngineEvent) + Send),
    stop: &Arc<AtomicBool>,
) -> Result<Outcome, Error> {
    match request {
        Request::Plan(goal) => engine.plan(goal, person, events).map(Outcome::Drafted),
        Request::Revise(feedback) => engine
            .revise(feedback, person, events)
            .map(Outcome::Drafted),
        Request::Answer(answer) => engine.answer(answer, person, events),
        Request::Approve {
            contract,
            commit_folder,
        } => engine.approve(contract, *commit_folder),
        Request::Discard => engine.discard(),
        Request::Run(selection) => engine
            .run(*selection, person, events, Arc::clone(stop))
            .map(Outcome::Ran),
        Request::Diff(step) => engine.diff(*step).map(Outcome::Diff),
        Request::Undo(step) => engine.undo(*step).map(Outcome::Undone),
    }
}

/// The person, at the other end of the session's channel: tick's one [`Person`] seam.
struct ChannelPerson {
    out: Sender<Msg>,
}

impl Person for ChannelPerson {
    fn answer_questions(&mut self, questions: &Questions) -> Option<String> {
        let (reply, answer) = channel();
        self.out
            .send(Msg::Questions(questions.clone(), reply))
            .ok()?;
        // The session gone (quit) leaves the questions open.
        answer.recv().ok().flatten()
    }

    fn go_on_after_deviation(&mut self, step: StepId, files: &[String]) -> bool {
        let (reply, answer) = channel();
        if self
            .out
            .send(Msg::Deviation(step, files.to_vec(), reply))
            .is_err()
        {
            return false;
        }
        answer.recv().unwrap_or(false)
    }
}
