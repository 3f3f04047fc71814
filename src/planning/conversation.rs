//! The planning conversation: how a planning run opens it (a new goal, a revision, answers)
//! and where it is kept between runs, `.tasks/draft/session.jsonl` (local, not committed),
//! so `--revise` and `--answer` go on with what the planner already explored.

use crate::error::{Error, Result};
use crate::fsx;
use crate::llm::Message;
use crate::plan::{Event, Phase, transition};
use crate::tasks::{Draft, SESSION_FILE, Store};

use super::Start;

/// What a planning run starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    New { goal: String, replace: bool },
    Revise(String),
    Answer(String),
}

impl Request {
    pub fn start(&self) -> Start {
        match self {
            Request::New { .. } => Start::New,
            Request::Revise(_) => Start::Revise,
            Request::Answer(_) => Start::Answer,
        }
    }
}

/// A conversation ready for the planner's next turn.
#[derive(Debug)]
pub struct Begun {
    pub goal: String,
    pub messages: Vec<Message>,
    /// The draft it goes on from (a revision, answers).
    pub old_draft: Option<Draft>,
}

/// Opens the conversation for `request`: checks the draft allows it and adds the person's
/// message. Under the store lock.
pub fn begin(store: &Store, request: Request) -> Result<Begun> {
    let draft = store.load_draft()?;
    match request {
        Request::New { goal, replace } => {
            check_no_draft(store, replace)?;
            let intro = format!(
                "Goal: {goal}\n\nExplore the repository to plan this, then call `submit_plan`."
            );
            Ok(Begun {
                goal,
                messages: vec![Message::user(intro)],
                old_draft: None,
            })
        }
        Request::Revise(feedback) => {
            let draft = draft.ok_or_else(|| {
                Error::input("there is no draft to revise")
                    .hint("start one with `tick plan \"goal\"`")
            })?;
            let phase = draft.plan.phase().unwrap_or(Phase::Draft);
            transition(phase, Event::Revise).map_err(|r| Error::input(r.reason).hint(r.hint))?;
            let goal = draft_goal(&draft);
            let mut messages = load(store)?;
            if messages.is_empty() {
                messages.push(Message::user(format!(
                    "Goal: {goal}\n\nA person wrote a draft plan for it (below). Revise it as \
                     they ask, exploring the repository as needed, then call `submit_plan` with \
                     the whole revised plan.\n\nTheir request: {feedback}\n\nThe draft:\n\n{}",
                    draft.src
                )));
            } else {
                messages.push(Message::user(format!(
                    "The person reviewed your draft and asks for a revision:\n\n{feedback}\n\n\
                     The draft as it stands now (they may have edited it):\n\n{}\n\nCall \
                     `submit_plan` with the whole revised plan.",
                    draft.src
                )));
            }
            Ok(Begun {
                goal,
                messages,
                old_draft: Some(draft),
            })
        }
        Request::Answer(answer) => {
            let draft = draft.ok_or_else(|| {
                Error::input("there is no draft waiting for answers")
                    .hint("start one with `tick plan \"goal\"`")
            })?;
            if draft.plan.phase() != Some(Phase::NeedsInput) {
                return Err(Error::input("the draft has no open questions to answer")
                    .hint("ask for changes with `tick plan --revise \"...\"`"));
            }
            let goal = draft_goal(&draft);
            let mut messages = load(store)?;
            if messages.is_empty() {
                return Err(
                    Error::input("the planning conversation of this draft is missing")
                        .hint("start over with `tick plan --force \"goal\"`"),
                );
            }
            messages.push(Message::user(format!(
                "The person's answers to your questions:\n\n{answer}\n\nContinue planning and \
                 finish with `submit_plan`."
            )));
            Ok(Begun {
                goal,
                messages,
                old_draft: Some(draft),
            })
        }
    }
}

/// The goal a draft was planned for: its `goal:`, else its title.
fn draft_goal(draft: &Draft) -> String {
    draft
        .plan
        .front
        .goal
        .clone()
        .or_else(|| draft.plan.title.clone())
        .unwrap_or_default()
}

/// The conversation kept with the draft; empty when there is none (a hand-written draft).
pub fn load(store: &Store) -> Result<Vec<Message>> {
    let path = store.draft_dir().join(SESSION_FILE);
    let Some(text) = fsx::read_capped(&path, fsx::MAX_LOCAL_LOG)? else {
        return Ok(Vec::new());
    };
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|err| {
                Error::input(format!("`{}:{}`: {err}", store.rel(&path), i + 1))
                    .hint("the planning conversation is damaged; `tick plan --force \"goal\"` starts over")
            })
        })
        .collect()
}

/// Keeps the conversation with the draft, `secrets` redacted and each entry capped.
pub fn save(
    store: &Store,
    messages: &[Message],
    secrets: &[&str],
    max_entry_bytes: usize,
) -> Result<()> {
    let text = crate::transcript::jsonl(messages, secrets, max_entry_bytes);
    fsx::write_atomic(&store.draft_dir().join(SESSION_FILE), text.as_bytes())
}

/// Forgets the conversation: a draft from a file has none to continue.
pub fn remove(store: &Store) -> Result<()> {
    fsx::remove_file(&store.draft_dir().join(SESSION_FILE))
}

/// Refuses to replace a draft unless `replace`: it may hold a person's edits.
pub fn check_no_draft(store: &Store, replace: bool) -> Result<()> {
    if replace {
        return Ok(());
    }
    let path = store.draft_plan_path();
    if !path.exists() {
        return Ok(());
    }
    let shown = store.rel(&path);
    let waiting = |title: &str| format!("a draft{title} is already waiting in `{shown}`");
    let draft = match store.load_draft() {
        Ok(draft) => draft,
        // Neither approving nor revising reads it: fixing or throwing it away does.
        Err(err) => {
            return Err(Error::input(format!(
                "{}, and it does not parse: {}",
                waiting(""),
                err.message
            ))
            .hint("fix it with `tick edit` (checked when the editor closes), throw it away with `tick discard`, or replace it with `--force`; it was not changed"));
        }
    };
    let title = draft
        .and_then(|draft: Draft| draft.plan.title)
        .map(|t| format!(" `{t}`"))
        .unwrap_or_default();
    Err(Error::input(waiting(&title))
    .hint("approve it (`tick approve`), revise it (`tick plan --revise \"...\"`), discard it (`tick discard`), or replace it with `--force`; it was not changed"))
}
