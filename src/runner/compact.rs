//! A step's turn under the compact executor ([`crate::compact::exec`]): per edit, a
//! schema-constrained decision (`add` or `change`, which of the step's files), then the code
//! as plain text (a fenced block, or SEARCH/REPLACE blocks), each answer passed through the
//! guards (only the step's files, flexible matching, no definition removed that the step does
//! not name) and written through the build-mode `write_file` (the same write policy and
//! sandbox as the agent's writes); a refusal goes back to the model, at most
//! [`RETRIES_PER_FILE`] times, a reply without its form once. Then the runner's verification
//! runs the step's approved `verify` (where the compact planner wrote the repository's test
//! command, so the person saw it); a failure goes back once with its output, for one more
//! edit; the step ends done only when it passes, else blocked with the reason. Nothing is
//! added to the checks at run time.

use std::sync::atomic::Ordering;

use super::{Emitter, Hooks, Runner, Sink, Work};
use crate::agent::AgentEvent;
use crate::agent::executor::{StepEnd, StepError, StepHooks, Verdict};
use crate::compact::exec::{
    self, Checked, Decision, EDIT_TOKENS, EditAnswer, ExecOptions, FENCE_GRAMMAR, RETRIES_PER_FILE,
    SEARCH_REPLACE_GRAMMAR, Shown,
};
use crate::compact::guards::Matched;
use crate::compact::repeat::{RepeatGuard, Runaway};
use crate::compact::tool_call;
use crate::llm::{Client, Message, Request, Response, StreamEvent, Structured, Usage};
use crate::plan::StepId;
use crate::tasks::Task;
use crate::tasks::todo_md::Step;
use crate::tools::{Access, PayloadLimits, Registry, ToolOutcome};

/// The step's files that name one file (not a glob), in order.
fn concrete(files: &[String]) -> Vec<String> {
    files
        .iter()
        .map(|f| f.trim().trim_start_matches("./").to_owned())
        .filter(|f| !f.is_empty() && !crate::watch::fingerprint::is_glob(f))
        .collect()
}

/// The text of `path` in the workspace, `None` when it does not exist (or cannot be read).
fn current(registry: &Registry, path: &str) -> Option<String> {
    let full = registry.workspace().resolve(path, Access::Read).ok()?;
    crate::fsx::read_optional(&full).ok().flatten()
}

fn shown(registry: &Registry, paths: &[String]) -> Shown {
    paths
        .iter()
        .map(|p| (p.clone(), current(registry, p)))
        .collect()
}

/// One compact step's conversation with the model.
struct EditTalk<'a> {
    client: &'a Client,
    options: &'a ExecOptions,
    registry: &'a Registry,
    payload: PayloadLimits,
    max_turns: u32,
    max_tokens: u64,
    /// The step's files (with a sub-step's parent's).
    scope: &'a [String],
    /// `S1 <title>`, said again with each ask.
    step_line: String,
    /// The step's title, files and done-when: what it names, for the definitions guard.
    step_text: String,
    /// The decision's schema.
    schema: serde_json::Value,
    done_when: Option<String>,
    /// The step's approved checks: a test they run by name is the name its new test takes.
    checks: Vec<String>,
    messages: Vec<Message>,
    asked: u32,
    /// Every message, refused answers included, for the record.
    transcript: Vec<Message>,
    /// What the model should hear with the next ask (what was applied, what was not).
    pending: String,
    /// The step's files as they were before its first edit (`None`: missing), put back
    /// before each further candidate and when the step ends blocked.
    originals: Vec<(String, Option<String>)>,
    /// Further candidates after the first, and the time after which none starts.
    candidates: u32,
    budget: std::time::Duration,
    /// Which candidate is being tried (0: the first); each one is warmer.
    candidate: u32,
    /// What each failed candidate changed, as a diff, with its checks' result.
    tried: String,
    /// The MCP tools the step's approved plan names (none without MCP).
    tools: Vec<tool_call::StepTool>,
}

impl EditTalk<'_> {
    /// One call; the answer joins the conversation. `structured` for a decision, `grammar`
    /// (or nothing) for code.
    async fn call(
        &mut self,
        temperature: f32,
        constraint: (Option<Structured>, Option<String>),
        usage: &mut Usage,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Response, StepError> {
        if self.asked >= self.max_turns {
            return Err(StepError::TurnLimit { turns: self.asked });
        }
        self.asked += 1;
        sink(AgentEvent::Request { turn: self.asked });
        let (structured, grammar) = constraint;
        let mut request = Request {
            model: self.options.model.clone(),
            system: Some(self.options.system.clone()),
            messages: self.messages.clone(),
            tools: Vec::new(),
            max_tokens: Some(EDIT_TOKENS),
            temperature: Some(temperature),
            structured,
            grammar,
        };
        let limit = self.answer_limit();
        let mut asked_again = false;
        let response = loop {
            match self.stream(&request, limit, sink).await? {
                Ok(response) => break response,
                // Cut while streaming: asked once more, warmer; a second loop is the answer
                // as it stands, for the parser to refuse.
                Err((runaway, partial)) if asked_again => {
                    sink(AgentEvent::Reminder {
                        text: format!("(tick) {runaway} again; stopped, taken as it stands"),
                    });
                    break Response {
                        text: partial,
                        finish: crate::llm::FinishReason::Length,
                        ..Response::default()
                    };
                }
                Err((runaway, _)) => {
                    let warmer = warmth(1) + candidate_warmth(self.candidate);
                    sink(AgentEvent::Retry {
                        attempt: 2,
                        of: 2,
                        wait_ms: 0,
                        reason: format!("{runaway}, cut; warmer at temperature {warmer:.2}"),
                    });
                    request.temperature = Some(warmer.max(temperature));
                    asked_again = true;
                }
            }
        };
        usage.add(&response.usage);
        sink(AgentEvent::Usage { usage: *usage });
        let used = usage.input_tokens + usage.output_tokens;
        if used > self.max_tokens {
            return Err(StepError::TokenLimit {
                used,
                limit: self.max_tokens,
            });
        }
        self.push(Message::Assistant {
            text: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
        });
        // A forced tool call is answered before the next user turn.
        for call in &response.tool_calls {
            self.push(Message::tool_result(&call.id, "Received."));
        }
        Ok(response)
    }

    /// One request, streamed through a [`RepeatGuard`]: `Err` with why and the text so far
    /// when the answer loops or runs past `limit`, the stream dropped at once.
    async fn stream(
        &self,
        request: &Request,
        limit: usize,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Result<Response, (Runaway, String)>, StepError> {
        let stop = tokio::sync::Notify::new();
        let mut guard = RepeatGuard::new(limit);
        let mut text = String::new();
        let mut runaway = None;
        let done = {
            let mut forward = |event: StreamEvent| {
                let delta = match &event {
                    StreamEvent::TextDelta(delta)
                    | StreamEvent::ToolCallArgsDelta { delta, .. } => Some(delta.clone()),
                    _ => None,
                };
                if let Some(delta) = delta {
                    if runaway.is_some() {
                        return;
                    }
                    text.push_str(&delta);
                    runaway = guard.push(&delta);
                    if runaway.is_some() {
                        stop.notify_one();
                    }
                    sink(AgentEvent::Text { text: delta });
                } else if let Some(event) = AgentEvent::from_stream(event) {
                    // As the agent shows it: a retry with its wait.
                    sink(event);
                }
            };
            tokio::select! {
                done = self.client.complete(request, &mut forward) => Some(done),
                () = stop.notified() => None,
            }
        };
        match (done, runaway) {
            (_, Some(runaway)) => Ok(Err((runaway, text))),
            (Some(done), None) => done.map(Ok).map_err(StepError::Llm),
            (None, None) => Ok(Err((Runaway::TooLong { limit }, text))),
        }
    }

    /// The longest answer a step's edit could need: its files twice over (a SEARCH and a
    /// REPLACE of all of them), and room for a new file.
    fn answer_limit(&self) -> usize {
        let files: usize = concrete(self.scope)
            .iter()
            .filter_map(|path| current(self.registry, path))
            .map(|text| text.len())
            .sum();
        files.saturating_mul(2).saturating_add(ANSWER_ROOM)
    }

    /// The schema-constrained decision: `action` and `path`, the path one of the step's.
    async fn decide(
        &mut self,
        temperature: f32,
        usage: &mut Usage,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Result<Decision, String>, StepError> {
        let structured = Structured {
            name: "edit".to_owned(),
            schema: self.schema.clone(),
            method: self.options.method,
        };
        let response = self
            .call(temperature, (Some(structured.clone()), None), usage, sink)
            .await?;
        // Checked without the path's enum: a path outside the step's files is the guard's to
        // refuse, naming the allowed ones.
        let checked = Structured {
            schema: crate::compact::without_enums(&self.schema),
            ..structured
        };
        let decision = checked.value(&response).and_then(|value| {
            serde_json::from_value::<Decision>(value)
                .map_err(|err| format!("the answer is not a decision: {err}"))
        });
        Ok(decision.and_then(|d| {
            let path = d.path.trim().trim_start_matches("./").to_owned();
            crate::compact::guards::check_allowed(&path, self.scope)
                .map_err(|e| e.to_string())
                .map(|()| Decision { path, ..d })
        }))
    }

    /// Asks for a decision after `ask` (the user turn), then for its code, until the code
    /// passes the guards and is written, the model says the file needs no change, or the
    /// retries are used. A refused answer is taken out of the conversation and the ask is
    /// made again with the refusal added, warmer, from the decision (a refusal may call for
    /// the other action: an `add` that copies a definition the file has is a `change`): a
    /// 1.5B model shown its own refused answer sent it again word for word (measured). The
    /// prompt still begins as before, so the server's prompt cache holds; the transcript keeps
    /// every answer. A code reply without its form is asked for once more under the same
    /// decision; a second one ends the file's edit.
    async fn edit(
        &mut self,
        ask: String,
        hooks: &mut Hooks<'_, '_, '_>,
        usage: &mut Usage,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), StepError> {
        let pending = std::mem::take(&mut self.pending);
        let ask = format!("{pending}{ask}");
        let base = self.messages.len();
        let mut prompt = ask.clone();
        for attempt in 0..=RETRIES_PER_FILE {
            self.messages.truncate(base);
            self.push(Message::user(prompt.clone()));
            let temperature = warmth(attempt) + candidate_warmth(self.candidate);
            let (refusal, last) = match self.decide(temperature, usage, sink).await? {
                Err(why) => (why, attempt == RETRIES_PER_FILE),
                Ok(decision) => match self
                    .code(&decision, temperature, hooks, usage, sink)
                    .await?
                {
                    Coded::Applied(note) => {
                        self.pending = note;
                        return Ok(());
                    }
                    Coded::Refused(why) => (why, attempt == RETRIES_PER_FILE),
                    Coded::Unparsed(why) => (why, true),
                },
            };
            self.refused(&refusal, last, sink);
            if last {
                break;
            }
            prompt = format!(
                "{ask}\n\nNot applied, an earlier answer: {refusal}\nAnswer with a different \
                 edit: decide again, as JSON."
            );
        }
        Ok(())
    }

    /// Asks for the code of `decision` in plain text, parses it and applies it; a reply
    /// without its form (no fence, no SEARCH/REPLACE block) is asked for once more.
    async fn code(
        &mut self,
        decision: &Decision,
        temperature: f32,
        hooks: &mut Hooks<'_, '_, '_>,
        usage: &mut Usage,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Coded, StepError> {
        let exists = current(self.registry, &decision.path).is_some();
        let mut ask = exec::code_instruction(
            &self.step_line,
            self.done_when.as_deref(),
            decision,
            exists,
            concrete(self.scope).len() > 1,
        );
        if decision.adds()
            && let Some(hint) = exec::test_name_hint(&self.checks, &decision.path)
        {
            ask.push('\n');
            ask.push_str(&hint);
        }
        let grammar = self.options.grammar.then(|| {
            if decision.adds() {
                FENCE_GRAMMAR.to_owned()
            } else {
                SEARCH_REPLACE_GRAMMAR.to_owned()
            }
        });
        let base = self.messages.len();
        let mut prompt = ask.clone();
        let mut again = false;
        let edits = loop {
            self.messages.truncate(base);
            self.push(Message::user(prompt.clone()));
            let warmer = if again { warmth(1) } else { temperature };
            let response = self
                .call(warmer, (None, grammar.clone()), usage, sink)
                .await?;
            match exec::parse_code(decision, &response.text) {
                Ok(edits) => break edits,
                Err(why) if again => return Ok(Coded::Unparsed(why)),
                Err(why) => {
                    sink(AgentEvent::Reminder { text: why.clone() });
                    prompt = format!(
                        "{ask}\n\nNot applied, an earlier answer: {why}\nAnswer again, in this \
                         form."
                    );
                    again = true;
                }
            }
        };
        Ok(match self.apply(&decision.path, &edits, hooks, sink) {
            Ok(note) => Coded::Applied(note),
            Err(why) => Coded::Refused(why),
        })
    }

    /// Tells of a refusal; the last one is not asked again: the model hears it with the next
    /// ask.
    fn refused(&mut self, refusal: &str, last: bool, sink: &mut (dyn FnMut(AgentEvent) + Send)) {
        sink(AgentEvent::Reminder {
            text: refusal.to_owned(),
        });
        if last {
            self.pending = format!("Not applied: {refusal}\ntick went on without it.\n\n");
        }
    }

    /// `message` joins the conversation and the transcript.
    fn push(&mut self, message: Message) {
        self.transcript.push(message.clone());
        self.messages.push(message);
    }

    /// Checks the edits of one answer with the guards and writes the result through
    /// `write_file`.
    fn apply(
        &self,
        path: &str,
        edits: &[EditAnswer],
        hooks: &mut Hooks<'_, '_, '_>,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<String, String> {
        sink(AgentEvent::ToolCall {
            name: "edit".to_owned(),
            detail: path.to_owned(),
        });
        let before = current(self.registry, path);
        let checked = exec::check_edits(edits, before.as_deref(), self.scope, &self.step_text)?;
        let Checked::Write {
            text,
            matched,
            placed,
        } = checked
        else {
            return Ok(format!("`{path}` was left as it is.\n\n"));
        };
        let arguments = serde_json::json!({"path": path, "content": text});
        // The hooks see the edit as the write it is: a `tool.pre` refusal goes back to the
        // model like a guard's, a `tool.post` formatter's rewrite is the step's.
        hooks.allow_tool("write_file", &arguments)?;
        hooks.before_tool("write_file");
        let outcome = self
            .registry
            .execute_within("write_file", &arguments, self.payload);
        let ToolOutcome::Output {
            text,
            is_error,
            effects,
        } = outcome
        else {
            return Err("the write was not made".to_owned());
        };
        hooks.after_tool(&effects);
        let told = hooks.notices().map(|n| format!("{n}\n\n"));
        sink(AgentEvent::ToolResult {
            name: "edit".to_owned(),
            is_error,
            exit_code: None,
        });
        if is_error {
            return Err(text);
        }
        let note = if matched == Matched::IgnoringIndentation {
            " (the search text matched ignoring indentation; the new lines were re-indented)"
                .to_owned()
        } else if matched == Matched::IgnoringBlankLines {
            " (the search text matched ignoring blank lines and indentation; the new lines \
             were re-indented)"
                .to_owned()
        } else if let Some(placed) = placed.filter(|_| before.is_some()) {
            format!(" ({placed})")
        } else {
            String::new()
        };
        Ok(format!(
            "Applied to `{path}`{note}.\n\n{}",
            told.unwrap_or_default()
        ))
    }

    /// The whole turn: candidates, each from the step's files as they were, until one
    /// passes the checks, [`ExecOptions`]'s count or the time budget runs out; a step that ends
    /// blocked leaves its files as they were, and what each candidate tried in `tried`.
    async fn run(
        &mut self,
        hooks: &mut Hooks<'_, '_, '_>,
        interrupted: &std::sync::atomic::AtomicBool,
        usage: &mut Usage,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<StepEnd, StepError> {
        let started = std::time::Instant::now();
        // Once, before every candidate: the calls are not made again per candidate.
        self.use_tools(usage, sink).await?;
        let first = self.messages.clone();
        let mut reason = String::new();
        for candidate in 0..=self.candidates {
            if candidate > 0 {
                if started.elapsed() >= self.budget {
                    reason.push_str(&format!(
                        "; no further candidate: {} s of the step spent (`limits.compact_candidate_budget_s`)",
                        started.elapsed().as_secs()
                    ));
                    break;
                }
                if let Err(why) = self.restore() {
                    return Ok(StepEnd::Blocked {
                        reason: format!("{reason}; the step's files could not be put back: {why}"),
                    });
                }
                self.messages.clone_from(&first);
                self.pending.clear();
                self.candidate = candidate;
                self.transcript.push(Message::user(format!(
                    "(tick) candidate {} of {}: the step's files as they were, temperature +{:.2}",
                    candidate + 1,
                    self.candidates + 1,
                    candidate_warmth(candidate)
                )));
            }
            match self.attempt(hooks, interrupted, usage, sink).await? {
                Err(failed) => {
                    let diff = self.changes();
                    self.tried.push_str(&format!(
                        "# candidate {} of {}: {failed}\n{diff}",
                        candidate + 1,
                        self.candidates + 1
                    ));
                    self.transcript.push(Message::user(format!(
                        "(tick) candidate {}: {failed}; it changed:\n{diff}",
                        candidate + 1
                    )));
                    reason = if self.candidates == 0 {
                        failed
                    } else {
                        format!(
                            "{failed} (candidate {} of {})",
                            candidate + 1,
                            self.candidates + 1
                        )
                    };
                }
                Ok(end) => return Ok(end),
            }
        }
        Ok(StepEnd::Blocked { reason })
    }

    /// A step that did not end done (nor interrupted) leaves its files as they were: put
    /// back, with what it tried returned for the record (`None`: it changed nothing).
    fn put_back(
        &mut self,
        id: StepId,
        result: Result<StepEnd, StepError>,
    ) -> (Result<StepEnd, StepError>, Option<String>) {
        let failed = !matches!(result, Ok(StepEnd::Done { .. } | StepEnd::Interrupted));
        let left = self.changes();
        if !failed || (self.tried.is_empty() && left.is_empty()) {
            return (result, None);
        }
        if !left.is_empty() && self.tried.is_empty() {
            self.tried = left;
        }
        let put_back = self.restore();
        let tried = Some(std::mem::take(&mut self.tried));
        let result = match (result, put_back) {
            (Ok(StepEnd::Blocked { reason }), Ok(())) => Ok(StepEnd::Blocked {
                reason: format!(
                    "{reason}; its files were put back as they were (`tick diff {id}` shows what \
                     it tried)"
                ),
            }),
            (Ok(StepEnd::Blocked { reason }), Err(why)) => Ok(StepEnd::Blocked {
                reason: format!("{reason}; its files could not be put back: {why}"),
            }),
            (other, _) => other,
        };
        (result, tried)
    }

    /// The step's files now against [`Self::originals`], as a unified diff.
    fn changes(&self) -> String {
        let mut out = String::new();
        for (path, before) in &self.originals {
            let now = current(self.registry, path);
            if now == *before {
                continue;
            }
            let (old, new) = (
                before.as_deref().unwrap_or(""),
                now.as_deref().unwrap_or(""),
            );
            let diff = similar::TextDiff::from_lines(old, new);
            out.push_str(
                &diff
                    .unified_diff()
                    .header(&format!("a/{path}"), &format!("b/{path}"))
                    .to_string(),
            );
        }
        out
    }

    /// Puts the step's files back as they were before its first edit.
    fn restore(&self) -> Result<(), String> {
        for (path, before) in &self.originals {
            if current(self.registry, path) == *before {
                continue;
            }
            let full = self
                .registry
                .workspace()
                .resolve(path, Access::Write)
                .map_err(|e| format!("`{path}`: {e}"))?;
            let put = match before {
                Some(text) => crate::fsx::write_atomic(&full, text.as_bytes()),
                None => crate::fsx::remove_file(&full),
            };
            put.map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// One candidate: one edit per file of the step, the checks, one fix after a failure.
    /// `Err`: the checks failed, in one line.
    async fn attempt(
        &mut self,
        hooks: &mut Hooks<'_, '_, '_>,
        interrupted: &std::sync::atomic::AtomicBool,
        usage: &mut Usage,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Result<StepEnd, String>, StepError> {
        let files = concrete(self.scope);
        // A step whose files are all globs: one edit, of a file the model names.
        let asks: Vec<Option<String>> = if files.is_empty() {
            vec![None]
        } else {
            files.iter().cloned().map(Some).collect()
        };
        for (i, path) in asks.into_iter().enumerate() {
            if interrupted.load(Ordering::Relaxed) {
                return Ok(Ok(StepEnd::Interrupted));
            }
            let ask = match &path {
                Some(path) => exec::decision_instruction(
                    &self.step_line,
                    path,
                    current(self.registry, path).is_some(),
                ),
                None => "First decide one edit of one of the step's files, as JSON: `action` \
                         (`add` or `change`) and `path`. The code comes after."
                    .to_owned(),
            };
            // The first ask rides on the step's message, so the prefix stays one message.
            let ask = if i == 0 {
                if self.candidate == 0 {
                    self.transcript.pop();
                }
                let first = match self.messages.pop() {
                    Some(Message::User { text }) => text,
                    _ => String::new(),
                };
                format!("{first}\n{ask}")
            } else {
                ask
            };
            self.edit(ask, hooks, usage, sink).await?;
        }
        let mut failures = 0;
        loop {
            if interrupted.load(Ordering::Relaxed) {
                return Ok(Ok(StepEnd::Interrupted));
            }
            match hooks.verify(None) {
                Verdict::Passed { .. } => {
                    let tried = if self.candidate > 0 {
                        format!(
                            ", candidate {} of {}",
                            self.candidate + 1,
                            self.candidates + 1
                        )
                    } else {
                        String::new()
                    };
                    return Ok(Ok(StepEnd::Done {
                        note: Some(format!(
                            "compact executor: {} requests, the step's checks passed{tried}",
                            self.asked
                        )),
                    }));
                }
                Verdict::GaveUp { reason } => return Ok(Ok(StepEnd::Blocked { reason })),
                Verdict::Failed { report } => {
                    failures += 1;
                    let failed = failure(hooks, &report);
                    if failures > 1 {
                        return Ok(Err(format!("{failed}, after one fix")));
                    }
                    let report = report
                        .split("Fix the problem and call `update_step`")
                        .next()
                        .unwrap_or(&report)
                        .to_owned();
                    let files = shown(self.registry, &concrete(self.scope));
                    self.edit(
                        exec::fix_instruction(&self.step_line, &report, &files),
                        hooks,
                        usage,
                        sink,
                    )
                    .await?;
                }
            }
        }
    }
}

impl EditTalk<'_> {
    /// The step's MCP tools, one decision each (`tool_call`): tick checks the decision and
    /// calls the tool through the step's registry; the result (or why there is none) rides on
    /// the next ask. A refused decision is asked again, [`RETRIES_PER_FILE`] times at most.
    async fn use_tools(
        &mut self,
        usage: &mut Usage,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), StepError> {
        let structured = Structured {
            name: "tool".to_owned(),
            schema: tool_call::tool_schema(&self.tools),
            method: self.options.method,
        };
        let checked = Structured {
            schema: crate::compact::without_enums(&structured.schema),
            ..structured.clone()
        };
        let ask = tool_call::tool_instruction(&self.step_line, &self.tools);
        for _ in 0..self.tools.len() {
            let first = match self.messages.pop() {
                Some(Message::User { text }) => format!("{text}\n"),
                Some(other) => {
                    self.messages.push(other);
                    String::new()
                }
                None => String::new(),
            };
            self.transcript.pop();
            self.push(Message::user(format!("{first}{ask}")));
            let mut note = String::new();
            for attempt in 0..=RETRIES_PER_FILE {
                let response = self
                    .call(
                        warmth(attempt),
                        (Some(structured.clone()), None),
                        usage,
                        sink,
                    )
                    .await?;
                let decided = checked.value(&response).and_then(|value| {
                    serde_json::from_value::<tool_call::ToolDecision>(value)
                        .map_err(|err| format!("the answer is not a tool decision: {err}"))
                });
                let called = decided.and_then(|d| {
                    let name = tool_call::check_decision(&d, &self.tools)?;
                    Ok((d, name))
                });
                let (decision, name) = match called {
                    Ok(called) => called,
                    Err(why) => {
                        sink(AgentEvent::Reminder { text: why.clone() });
                        note = format!("Not called: {why}\n\n");
                        self.push(Message::user(format!("{note}Decide again, as JSON.")));
                        continue;
                    }
                };
                sink(AgentEvent::ToolCall {
                    name: name.clone(),
                    detail: decision.tool.clone(),
                });
                // A tool the step does not name is the registry's to refuse, with the reason.
                let offered = self.tools.iter().any(|t| t.model_name == name);
                let (text, is_error) = match self.registry.execute(&name, &decision.arguments) {
                    ToolOutcome::Output { text, is_error, .. } => (text, is_error),
                    _ => ("the tool gave no text".to_owned(), true),
                };
                sink(AgentEvent::ToolResult {
                    name,
                    is_error,
                    exit_code: None,
                });
                note = tool_call::result_note(decision.tool.trim(), &text, is_error);
                if offered {
                    break;
                }
                sink(AgentEvent::Reminder { text: text.clone() });
                self.push(Message::user(format!("{note}Decide again, as JSON.")));
            }
            // The result (or the last refusal) is the next ask's start.
            self.push(Message::user(note));
        }
        Ok(())
    }
}

/// What came of a code ask.
enum Coded {
    /// Written (or left as it is): the note for the next ask.
    Applied(String),
    /// Refused by the guards or the write.
    Refused(String),
    /// Twice without its form.
    Unparsed(String),
}

/// Room in an answer beyond twice the step's files: a new file, the decision's JSON.
const ANSWER_ROOM: usize = 16 * 1024;

/// The temperature of an attempt: the first cool, a retry warmer.
fn warmth(attempt: u32) -> f32 {
    if attempt == 0 { 0.2 } else { 0.7 }
}

/// How much warmer each further candidate is than the first.
fn candidate_warmth(candidate: u32) -> f32 {
    0.25 * f32::from(u8::try_from(candidate.min(4)).unwrap_or(4))
}

/// What failed, in one line for the blocked reason.
fn failure(hooks: &Hooks<'_, '_, '_>, report: &str) -> String {
    match hooks.verifier.evidence().iter().find(|e| e.exit_code != 0) {
        Some(e) => format!("`{}` failed (exit {})", e.command, e.exit_code),
        None => report
            .lines()
            .next()
            .unwrap_or("the checks failed")
            .to_owned(),
    }
}

impl Runner<'_> {
    /// The compact executor's turn on a step (see the module documentation): the same hooks
    /// as the agent's (verification, journal, tamper guard, a person's edits), checking what
    /// the step's approved `verify` says.
    pub(super) fn work_compact(
        &mut self,
        task: &Task,
        id: StepId,
        step: &Step,
        scope: &[String],
        options: &ExecOptions,
        sink: &mut Sink<'_>,
    ) -> Work {
        let root = self.deps.store.root().to_path_buf();
        if let Some(watcher) = self.watcher.as_mut() {
            while watcher.try_next().is_some() {}
        }
        let checks = step.verify.clone();
        let files = shown(self.deps.registry, &concrete(scope));
        let step_line = format!("{id} {}", step.title);
        let first = exec::step_message(
            &task.title(),
            &step_line,
            step.done_when.as_deref(),
            &checks,
            &files,
        );
        // `step.claimed` and `step.verify` hooks apply here too; tool hooks do not (the
        // compact executor's edits are not the agent's tool calls).
        let fire = self.for_step(task, id, step);
        // Exactly the MCP tools the step's approved plan names, as in the agent's turn.
        let (registry, warnings) = self.deps.registry.for_step(&id.to_string(), &step.tools);
        for text in warnings {
            sink(super::RunEvent::McpWarning { step: id, text });
        }
        let emitter = Emitter::new(&mut *sink);
        let verifier =
            super::StepVerifier::new(&root, self.deps.registry.command_env(), id, &checks)
                // Each candidate checks twice at most (its edit, its one fix).
                .with_max_attempts(2 * (self.deps.limits.compact_candidates + 1));
        let recorder = self.recorder(task, id, scope);
        let mut hooks = Hooks::new(
            &root,
            id,
            (verifier, recorder),
            self.watcher.as_mut(),
            &emitter,
            scope,
            super::earlier_in_scope(task, id, scope),
            // Compact turns are edit objects: no `propose_replan` reaches this check.
            super::replan::Check {
                task,
                step: id,
                max_new: self.deps.limits.replan_max_new_steps,
            },
        );
        hooks.fire = fire;
        hooks.verify_before_change();
        let mut turns = EditTalk {
            client: self.deps.client,
            options,
            registry: &registry,
            payload: PayloadLimits::from(&self.deps.limits),
            max_turns: self.deps.limits.max_turns,
            max_tokens: self.deps.limits.max_tokens,
            scope,
            step_line,
            step_text: format!(
                "{} {} {}",
                step.title,
                scope.join(" "),
                step.done_when.as_deref().unwrap_or("")
            ),
            schema: exec::decision_schema(&concrete(scope)),
            done_when: step.done_when.clone(),
            checks: checks.clone(),
            messages: vec![Message::user(first.clone())],
            transcript: vec![Message::user(first)],
            asked: 0,
            pending: String::new(),
            originals: concrete(scope)
                .into_iter()
                .map(|p| {
                    let text = current(self.deps.registry, &p);
                    (p, text)
                })
                .collect(),
            candidates: self.deps.limits.compact_candidates,
            budget: self.deps.limits.compact_candidate_budget,
            candidate: 0,
            tried: String::new(),
            tools: tool_call::step_tools(&registry.specs()),
        };
        let mut agent = |agent: AgentEvent| {
            // As in the agent's turn: a server's stop or restart is told when it happens.
            for text in registry.take_mcp_notices() {
                emitter.emit(super::RunEvent::McpWarning { step: id, text });
            }
            emitter.emit(super::RunEvent::Agent { step: id, agent });
        };
        let interrupted = self.deps.interrupted.clone();
        let mut usage = self.usage;
        let result =
            crate::rt::block_on(turns.run(&mut hooks, &interrupted, &mut usage, &mut agent))
                .unwrap_or_else(|err| Err(super::runtime_failed(&err)));
        self.usage = usage;
        for text in registry.take_mcp_notices() {
            emitter.emit(super::RunEvent::McpWarning { step: id, text });
        }
        // A blocked step leaves its files as they were; what it tried is kept beside its
        // transcript, for `tick diff`.
        let (result, save) = turns.put_back(id, result);
        let messages = std::mem::take(&mut turns.transcript);
        let work = hooks.finish(result);
        if let Some(tried) = save {
            self.save_tried(&task.dir, id, &tried);
        }
        self.save_transcript(&task.dir, id, &messages);
        work
    }
}
