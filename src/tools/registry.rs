//! Which tools exist in each mode, and the two guards that enforce it.
//!
//! [`tools_for_mode`] is the one table: plan mode gets only tools that cannot change the
//! workspace. [`Registry::specs`] sends the model only the mode's tools (first guard), and
//! [`Registry::execute`] refuses any other name before anything runs (second guard), so a
//! model that invents or remembers a writing tool in plan mode gets an error and nothing
//! happens.

use std::fmt;

use super::bash::{self, CommandEnv};
use super::workspace::Workspace;
use super::{
    PayloadLimits, ToolOutcome, ask_user, edit_file, list_files, propose_replan, read_file,
    run_command, search_files, submit_plan, update_step, write_file,
};
use crate::llm::ToolSpec;

/// The phase a turn runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Planning: read, list, search, ask, submit the plan. Nothing is written.
    Plan,
    /// Executing an approved plan step by step.
    Build,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Plan => "plan",
            Mode::Build => "build",
        })
    }
}

/// What a tool can do to the world, so a test can assert what a mode can never do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Reads the workspace.
    Read,
    /// Hands a result to the runner (a plan, questions, a step status); writes nothing itself.
    Report,
    /// Changes files in the workspace.
    Write,
    /// Runs commands, which can do anything a write can.
    Execute,
    /// Runs allow-listed programs from an argv (`run_command`). In plan mode the registry
    /// offers it only under the read-only sandbox, where no command can write.
    ReadCommand,
}

impl ToolKind {
    pub fn is_writing(self) -> bool {
        matches!(self, ToolKind::Write | ToolKind::Execute)
    }
}

/// Every tool tick implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    ReadFile,
    ListFiles,
    SearchFiles,
    SubmitPlan,
    AskUser,
    WriteFile,
    EditFile,
    Bash,
    UpdateStep,
    RunCommand,
    ProposeReplan,
}

impl Tool {
    pub const ALL: [Tool; 11] = [
        Tool::ReadFile,
        Tool::ListFiles,
        Tool::SearchFiles,
        Tool::SubmitPlan,
        Tool::AskUser,
        Tool::WriteFile,
        Tool::EditFile,
        Tool::Bash,
        Tool::UpdateStep,
        Tool::RunCommand,
        Tool::ProposeReplan,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::ReadFile => read_file::NAME,
            Tool::ListFiles => list_files::NAME,
            Tool::SearchFiles => search_files::NAME,
            Tool::SubmitPlan => submit_plan::NAME,
            Tool::AskUser => ask_user::NAME,
            Tool::WriteFile => write_file::NAME,
            Tool::EditFile => edit_file::NAME,
            Tool::Bash => bash::NAME,
            Tool::UpdateStep => update_step::NAME,
            Tool::RunCommand => run_command::NAME,
            Tool::ProposeReplan => propose_replan::NAME,
        }
    }

    pub fn kind(self) -> ToolKind {
        match self {
            Tool::ReadFile | Tool::ListFiles | Tool::SearchFiles => ToolKind::Read,
            Tool::SubmitPlan | Tool::AskUser | Tool::UpdateStep | Tool::ProposeReplan => {
                ToolKind::Report
            }
            Tool::WriteFile | Tool::EditFile => ToolKind::Write,
            Tool::Bash => ToolKind::Execute,
            Tool::RunCommand => ToolKind::ReadCommand,
        }
    }

    /// The tool's definition; `run_command`'s lists the programs of the default table (a
    /// registry describes its own table, see [`Registry::specs`]).
    pub fn spec(self) -> ToolSpec {
        match self {
            Tool::RunCommand => run_command::spec(&run_command::Setup::new(
                super::allowlist::AllowList::default(),
            )),
            Tool::ReadFile => read_file::spec(),
            Tool::ListFiles => list_files::spec(),
            Tool::SearchFiles => search_files::spec(),
            Tool::SubmitPlan => submit_plan::spec(),
            Tool::AskUser => ask_user::spec(),
            Tool::WriteFile => write_file::spec(),
            Tool::EditFile => edit_file::spec(),
            Tool::Bash => bash::spec(),
            Tool::UpdateStep => update_step::spec(),
            Tool::ProposeReplan => propose_replan::spec(),
        }
    }

    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    fn run(
        self,
        registry: &Registry,
        arguments: &serde_json::Value,
        limits: PayloadLimits,
    ) -> ToolOutcome {
        let workspace = &registry.workspace;
        match self {
            Tool::ReadFile => read_file::run(workspace, arguments),
            Tool::ListFiles => list_files::run(workspace, arguments),
            Tool::SearchFiles => search_files::run(workspace, arguments),
            Tool::SubmitPlan => submit_plan::run(arguments),
            Tool::AskUser => ask_user::run(arguments),
            Tool::WriteFile => write_file::run_within(workspace, arguments, limits),
            Tool::EditFile => edit_file::run_within(workspace, arguments, limits),
            Tool::Bash => bash::run(workspace, &registry.command_env, arguments),
            Tool::UpdateStep => update_step::run(arguments),
            Tool::ProposeReplan => propose_replan::run(arguments),
            Tool::RunCommand => match &registry.run_command {
                Some(setup) => run_command::run(workspace, &registry.command_env, setup, arguments),
                None => ToolOutcome::error(format!("`{}` is not available", self.name())),
            },
        }
    }
}

/// The tools that exist in `mode`, in the order the model sees them. The one place that
/// decides.
pub fn tools_for_mode(mode: Mode) -> &'static [Tool] {
    match mode {
        Mode::Plan => &[
            Tool::ReadFile,
            Tool::ListFiles,
            Tool::SearchFiles,
            Tool::RunCommand,
            Tool::SubmitPlan,
            Tool::AskUser,
        ],
        Mode::Build => &[
            Tool::ReadFile,
            Tool::ListFiles,
            Tool::SearchFiles,
            Tool::WriteFile,
            Tool::EditFile,
            Tool::Bash,
            Tool::RunCommand,
            Tool::UpdateStep,
            Tool::ProposeReplan,
        ],
    }
}

/// The tools of one mode, bound to one workspace and to the environment its commands get.
#[derive(Debug, Clone)]
pub struct Registry {
    mode: Mode,
    workspace: Workspace,
    /// The mode's tools that this registry offers: [`tools_for_mode`] minus `run_command`
    /// unless it is set up (and, in plan mode, sandboxed read-only).
    tools: Vec<Tool>,
    command_env: CommandEnv,
    run_command: Option<run_command::Setup>,
    /// The MCP tools this turn is offered (after tick's own): while planning the person's
    /// read-only ones, in a step those its plan names ([`Registry::for_step`]).
    mcp: crate::mcp::Offered,
    /// The person's MCP servers, started when a turn first needs them.
    launcher: Option<std::sync::Arc<crate::mcp::Launcher>>,
}

impl Registry {
    /// Commands inherit tick's environment minus [`bash::DEFAULT_SECRET_ENV`]; see
    /// [`Registry::with_secret_env`] and [`Registry::with_base_env`].
    pub fn for_mode(mode: Mode, workspace: Workspace) -> Self {
        let mut registry = Self {
            mode,
            workspace,
            tools: Vec::new(),
            command_env: CommandEnv::default(),
            run_command: None,
            mcp: match mode {
                Mode::Plan => crate::mcp::Offered::none_for_planning(),
                Mode::Build => crate::mcp::Offered::none_for_step(""),
            },
            launcher: None,
        };
        registry.select_tools();
        registry
    }

    /// Offer `run_command` with `setup`'s table. In plan mode it is offered only while the
    /// registry's sandbox is the read-only policy ([`Registry::offers`] says whether it is).
    #[must_use]
    pub fn with_run_command(mut self, setup: run_command::Setup) -> Self {
        self.run_command = Some(setup);
        self.select_tools();
        self
    }

    /// The person's MCP servers for this registry's turns. In plan mode the tools their config
    /// names read-only are offered at once (the servers start here); in build mode a step
    /// gets its own ([`Registry::for_step`]). Returns a line for the person per problem.
    #[must_use]
    pub fn with_mcp(
        mut self,
        launcher: std::sync::Arc<crate::mcp::Launcher>,
    ) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        if self.mode == Mode::Plan {
            let (offered, problems) = launcher.for_planning();
            self.mcp = offered;
            warnings = problems;
        }
        self.launcher = Some(launcher);
        (self, warnings)
    }

    /// This build registry for step `step`, offered exactly the MCP tools `tools` names
    /// (`SERVER.TOOL`, from the approved plan): none when it names none. Returns a line for
    /// the person per tool it cannot offer.
    pub fn for_step(&self, step: &str, tools: &[String]) -> (Registry, Vec<String>) {
        let mut registry = self.clone();
        let (offered, warnings) = match &self.launcher {
            Some(launcher) if !tools.is_empty() => launcher.for_step(step, tools),
            Some(_) | None if tools.is_empty() => {
                (crate::mcp::Offered::none_for_step(step), Vec::new())
            }
            _ => (
                crate::mcp::Offered::none_for_step(step),
                vec![format!(
                    "step {step} names MCP tools ({}), but no MCP servers are configured; the \
                     step runs without them",
                    tools.join(", ")
                )],
            ),
        };
        registry.mcp = offered;
        (registry, warnings)
    }

    /// The lines for the person the MCP tools have had since the last call (a server that
    /// stopped, or was started again).
    pub fn take_mcp_notices(&self) -> Vec<String> {
        self.mcp.take_notices()
    }

    /// Whether the model is offered (and may run) `tool`.
    pub fn offers(&self, tool: Tool) -> bool {
        self.tools.contains(&tool)
    }

    fn select_tools(&mut self) {
        let run_command_ok = self.run_command.is_some()
            && (self.mode == Mode::Build || run_command::read_only(self.command_env.sandbox()));
        self.tools = tools_for_mode(self.mode)
            .iter()
            .copied()
            .filter(|&tool| tool != Tool::RunCommand || run_command_ok)
            .collect();
    }

    /// Also pass these variables to commands (`sandbox.env` in the person's own config); the
    /// rest of tick's environment stays out but for the allow-list ([`bash::PASSED_ENV`]).
    #[must_use]
    pub fn with_passed_env(mut self, names: Vec<String>) -> Self {
        self.command_env = self.command_env.with_passed(names);
        self
    }

    /// Also keep these variables (the configured provider's key, say) from commands.
    #[must_use]
    pub fn with_secret_env(mut self, names: Vec<String>) -> Self {
        self.command_env = self.command_env.with_secrets(names);
        self
    }

    /// Commands start from exactly `vars` instead of tick's own environment (secrets are still
    /// removed), so a caller or a test decides what they see.
    #[must_use]
    pub fn with_base_env(mut self, vars: Vec<(String, String)>) -> Self {
        self.command_env = self.command_env.with_base(vars);
        self
    }

    /// Run the commands of this registry's tools under `sandbox` (`tick run` always says
    /// which; without this call they run unsandboxed).
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: crate::sandbox::Sandboxing) -> Self {
        self.command_env = self.command_env.with_sandbox(sandbox);
        // Plan mode offers `run_command` only under the read-only policy.
        self.select_tools();
        self
    }

    /// Stop the command under way as soon as `flag` is set (by Ctrl-C in `tick run`).
    #[must_use]
    pub fn with_interrupt(mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.command_env = self.command_env.with_interrupt(flag);
        self
    }

    pub fn command_env(&self) -> &CommandEnv {
        &self.command_env
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The definitions sent to the model: the mode's tools and no others, then the MCP
    /// tools this turn is offered.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self
            .tools
            .iter()
            .map(|&tool| match (tool, &self.run_command) {
                (Tool::RunCommand, Some(setup)) => run_command::spec(setup),
                _ => tool.spec(),
            })
            .collect();
        specs.extend(self.mcp.specs());
        specs
    }

    /// The tools of this mode described for a model that writes its calls as text: each
    /// name, what it does, and its arguments' JSON schema, after `grammar` (the prompt that
    /// says how a call is written).
    pub fn text_tools_prompt(&self, grammar: &str) -> String {
        let mut out = grammar.trim_end().to_owned();
        out.push('\n');
        for spec in self.specs() {
            out.push_str(&format!(
                "\n### {}\n{}\nArguments (JSON schema): {}\n",
                spec.name,
                spec.description.trim(),
                spec.parameters
            ));
        }
        out
    }

    /// Run the tool `name` with `arguments`. A name outside this mode's tools is refused
    /// before anything runs, whatever the specs said.
    pub fn execute(&self, name: &str, arguments: &serde_json::Value) -> ToolOutcome {
        self.execute_within(name, arguments, PayloadLimits::default())
    }

    /// [`Registry::execute`], with the caps on what a call may carry.
    pub fn execute_within(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        limits: PayloadLimits,
    ) -> ToolOutcome {
        if name.starts_with(crate::mcp::PREFIX) {
            // Offered or refused with the reason, by the same selection the specs came from.
            return ToolOutcome::answered(self.mcp.call(name, arguments));
        }
        match Tool::from_name(name).filter(|tool| self.tools.contains(tool)) {
            Some(tool) => tool.run(self, arguments, limits),
            None => ToolOutcome::error(self.refusal(name)),
        }
    }

    fn refusal(&self, name: &str) -> String {
        let available = self
            .tools
            .iter()
            .map(|tool| tool.name())
            .collect::<Vec<_>>()
            .join(", ");
        // A known tool outside the mode: in plan mode every such tool is a build tool.
        match (self.mode, Tool::from_name(name)) {
            (Mode::Plan, Some(Tool::RunCommand)) => format!(
                "`{name}` is not available in this planning run: commands run only inside the \
                 read-only sandbox, which is not available here; use read_file, list_files and \
                 search_files"
            ),
            (Mode::Build, Some(Tool::RunCommand)) => {
                format!("`{name}` is not available in this run; use bash")
            }
            (Mode::Plan, Some(_)) => format!(
                "`{name}` is not available in plan mode: planning is read-only; call submit_plan with the plan"
            ),
            (Mode::Build, Some(_)) => format!(
                "`{name}` is not available in build mode: the plan is already approved; if the step cannot be done as planned, report it as blocked"
            ),
            _ => format!(
                "unknown tool `{name}`; the tools in {} mode are: {available}",
                self.mode
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::output_of;
    use serde_json::json;
    use std::fs;

    #[test]
    fn the_text_prompt_describes_exactly_the_modes_tools() {
        for mode in [Mode::Plan, Mode::Build] {
            let (_dir, registry) = registry(mode);
            let prompt = registry.text_tools_prompt("GRAMMAR\n");
            assert!(prompt.starts_with("GRAMMAR\n"));
            for tool in Tool::ALL {
                let heading = format!("\n### {}\n", tool.name());
                assert_eq!(
                    prompt.contains(&heading),
                    registry.offers(tool),
                    "{mode}: {}",
                    tool.name()
                );
            }
            assert!(prompt.contains("Arguments (JSON schema): {"));
        }
    }

    fn registry(mode: Mode) -> (tempfile::TempDir, Registry) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, Registry::for_mode(mode, ws))
    }

    fn names(registry: &Registry) -> Vec<String> {
        registry.specs().into_iter().map(|spec| spec.name).collect()
    }

    /// Every file below `root`, with its content, to show that a refused call changed nothing.
    fn snapshot(root: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let content = fs::read(&path).unwrap();
                    files.push((path, content));
                }
            }
        }
        files.sort();
        files
    }

    #[test]
    fn plan_mode_specs_are_exactly_the_read_and_report_tools() {
        let (_dir, plan) = registry(Mode::Plan);
        assert_eq!(
            names(&plan),
            [
                "read_file",
                "list_files",
                "search_files",
                "submit_plan",
                "ask_user"
            ]
        );
        for tool in tools_for_mode(Mode::Plan) {
            assert!(!tool.kind().is_writing(), "{tool:?} can write");
        }
        for name in names(&plan) {
            let tool = Tool::from_name(&name).unwrap();
            assert!(!tool.kind().is_writing(), "{name} can write");
            assert!(
                ![
                    "write_file",
                    "edit_file",
                    "bash",
                    "update_step",
                    "propose_replan"
                ]
                .contains(&name.as_str()),
                "{name}"
            );
        }
    }

    #[test]
    fn plan_mode_runs_commands_only_under_the_read_only_sandbox() {
        use crate::sandbox::{Policy, Sandboxing};
        let setup = || run_command::Setup::new(crate::tools::allowlist::AllowList::default());
        let (dir, plan) = registry(Mode::Plan);
        let root = dir.path().canonicalize().unwrap();
        // Set up, but without a sandbox: not offered, and refused if called anyway.
        let plan = plan.with_run_command(setup());
        assert!(!names(&plan).contains(&"run_command".to_owned()));
        assert!(!plan.offers(Tool::RunCommand));
        let before = snapshot(dir.path());
        let outcome = plan.execute("run_command", &json!({"argv": ["find", ".", "-delete"]}));
        assert_eq!(
            outcome,
            ToolOutcome::error(
                "`run_command` is not available in this planning run: commands run only inside \
                 the read-only sandbox, which is not available here; use read_file, list_files \
                 and search_files"
            )
        );
        assert_eq!(snapshot(dir.path()), before);
        // The build policy writes: still not offered in plan mode.
        let plan = plan.with_sandbox(Sandboxing::On(Policy::build(&root)));
        assert!(!plan.offers(Tool::RunCommand));
        let plan = plan.with_sandbox(Sandboxing::Off);
        assert!(!plan.offers(Tool::RunCommand));
        // The read-only policy: offered, after the read tools.
        let plan = plan.with_sandbox(Sandboxing::On(Policy::read_only(&root)));
        assert_eq!(
            names(&plan),
            [
                "read_file",
                "list_files",
                "search_files",
                "run_command",
                "submit_plan",
                "ask_user"
            ]
        );
        for tool in tools_for_mode(Mode::Plan) {
            assert!(!tool.kind().is_writing(), "{tool:?} can write");
        }
        assert_eq!(Tool::RunCommand.kind(), ToolKind::ReadCommand);
        // The spec lists the registry's own table.
        let spec = plan
            .specs()
            .into_iter()
            .find(|s| s.name == "run_command")
            .unwrap();
        assert!(
            spec.description.contains("git (status, diff, log"),
            "{}",
            spec.description
        );
        assert_eq!(spec.parameters["required"], json!(["argv"]));

        // Build mode offers it with whatever sandbox the run has.
        let (_dir, build) = registry(Mode::Build);
        assert!(!build.offers(Tool::RunCommand));
        let build = build.with_run_command(setup());
        assert!(build.offers(Tool::RunCommand));
        let outcome = build.execute("run_command", &json!({"argv": ["cat", "a.txt"]}));
        let ToolOutcome::Output { text, is_error, .. } = &outcome else {
            panic!("{outcome:?}");
        };
        assert!(!is_error, "{text}");
        assert!(text.starts_with("one\ntwo\nexit code 0, "), "{text}");
        assert_eq!(outcome.exit_code(), Some(0));
    }

    #[test]
    fn build_mode_specs_have_the_build_tools_and_no_planning_tools() {
        let (_dir, build) = registry(Mode::Build);
        assert_eq!(
            names(&build),
            [
                "read_file",
                "list_files",
                "search_files",
                "write_file",
                "edit_file",
                "bash",
                "update_step",
                "propose_replan"
            ]
        );
        assert_eq!(Tool::ProposeReplan.kind(), ToolKind::Report);
        assert_eq!(Tool::WriteFile.kind(), ToolKind::Write);
        assert_eq!(Tool::EditFile.kind(), ToolKind::Write);
        assert_eq!(Tool::Bash.kind(), ToolKind::Execute);
        assert_eq!(Tool::UpdateStep.kind(), ToolKind::Report);
        // Every tool exists in some mode, and `from_name` knows every name.
        for tool in Tool::ALL {
            assert!(
                tools_for_mode(Mode::Plan).contains(&tool)
                    || tools_for_mode(Mode::Build).contains(&tool),
                "{tool:?}"
            );
            assert_eq!(Tool::from_name(tool.name()), Some(tool));
        }
    }

    #[test]
    fn build_mode_executes_the_build_tools() {
        let (dir, build) = registry(Mode::Build);
        let build = build.with_base_env(vec![("PATH".to_owned(), "/usr/bin:/bin".to_owned())]);
        let outcome = build.execute("write_file", &json!({"path": "b/c.txt", "content": "x\n"}));
        assert_eq!(outcome.effects().unwrap().files_written[0].path, "b/c.txt");
        let outcome = build.execute(
            "edit_file",
            &json!({"path": "a.txt", "old": "two", "new": "2"}),
        );
        assert!(
            matches!(
                outcome,
                ToolOutcome::Output {
                    is_error: false,
                    ..
                }
            ),
            "{outcome:?}"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\n2\n"
        );
        let outcome = build.execute("bash", &json!({"command": "cat b/c.txt a.txt"}));
        let (text, is_error, effects) = output_of(outcome);
        assert!(!is_error, "{text}");
        assert!(text.starts_with("x\none\n2\nexit code 0, "), "{text}");
        assert!(effects.ran_command);
        assert!(matches!(
            build.execute("update_step", &json!({"id": "S1", "status": "done"})),
            ToolOutcome::StepUpdate(_)
        ));
        assert!(matches!(
            build.execute(
                "propose_replan",
                &json!({"step": "S1", "reason": "r", "replace": [{"title": "t"}]})
            ),
            ToolOutcome::Replan(_)
        ));
    }

    #[test]
    fn secret_env_names_add_to_the_defaults() {
        let (_dir, build) = registry(Mode::Build);
        let build = build.with_secret_env(vec!["MY_TOKEN".to_owned(), "OPENAI_API_KEY".to_owned()]);
        let mut expected: Vec<String> = bash::DEFAULT_SECRET_ENV
            .iter()
            .map(|&s| s.to_owned())
            .collect();
        expected.push("MY_TOKEN".to_owned());
        assert_eq!(build.command_env().secrets(), expected);
    }

    #[test]
    fn specs_are_strict_objects() {
        for tool in Tool::ALL {
            let spec = tool.spec();
            assert_eq!(spec.name, tool.name());
            assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
            assert_eq!(
                spec.parameters["additionalProperties"], false,
                "{}",
                spec.name
            );
            assert!(!spec.description.is_empty());
        }
    }

    #[test]
    fn writing_tools_are_refused_in_plan_mode_and_write_nothing() {
        let (dir, plan) = registry(Mode::Plan);
        let before = snapshot(dir.path());
        let calls = [
            ("write_file", json!({"path": "a.txt", "content": "pwned"})),
            ("write_file", json!({"path": "new.txt", "content": "x"})),
            (
                "edit_file",
                json!({"path": "a.txt", "old": "one", "new": "pwned"}),
            ),
            (
                "bash",
                json!({"command": "echo pwned > a.txt; touch b.txt"}),
            ),
            ("update_step", json!({"id": "S1", "status": "done"})),
        ];
        for (name, arguments) in calls {
            let outcome = plan.execute(name, &arguments);
            assert_eq!(
                outcome,
                ToolOutcome::error(format!(
                    "`{name}` is not available in plan mode: planning is read-only; call submit_plan with the plan"
                ))
            );
        }
        assert_eq!(snapshot(dir.path()), before);
    }

    #[test]
    fn unknown_and_wrong_mode_tools_are_refused() {
        let (_dir, plan) = registry(Mode::Plan);
        assert_eq!(
            plan.execute("delete_everything", &json!({})),
            ToolOutcome::error(
                "unknown tool `delete_everything`; the tools in plan mode are: read_file, list_files, search_files, submit_plan, ask_user"
            )
        );
        // A local re-plan is the executor's: the planner submits whole plans.
        assert_eq!(
            plan.execute(
                "propose_replan",
                &json!({"step": "S1", "reason": "r", "replace": [{"title": "t"}]})
            ),
            ToolOutcome::error(
                "`propose_replan` is not available in plan mode: planning is read-only; call submit_plan with the plan"
            )
        );
        // Names are exact: no case folding into a real tool.
        assert!(matches!(
            plan.execute("READ_FILE", &json!({"path": "a.txt"})),
            ToolOutcome::Output { is_error: true, .. }
        ));
        let (_dir, build) = registry(Mode::Build);
        assert_eq!(
            build.execute("submit_plan", &json!({})),
            ToolOutcome::error(
                "`submit_plan` is not available in build mode: the plan is already approved; if the step cannot be done as planned, report it as blocked"
            )
        );
        assert!(matches!(
            build.execute("ask_user", &json!({"questions": [{"question": "?"}]})),
            ToolOutcome::Output { is_error: true, .. }
        ));
    }

    #[test]
    fn execute_dispatches_to_the_tools() {
        let (_dir, plan) = registry(Mode::Plan);
        assert_eq!(
            plan.execute("read_file", &json!({"path": "a.txt"})),
            ToolOutcome::text("     1\tone\n     2\ttwo\n")
        );
        assert_eq!(
            plan.execute("list_files", &json!(null)),
            ToolOutcome::text("a.txt\n")
        );
        assert_eq!(
            plan.execute("search_files", &json!({"pattern": "tw"})),
            ToolOutcome::text("a.txt:2: two\n")
        );
        assert!(matches!(
            plan.execute(
                "submit_plan",
                &json!({"title": "t", "summary": "s", "steps": [{"title": "x"}]})
            ),
            ToolOutcome::Plan(_)
        ));
        assert!(matches!(
            plan.execute("ask_user", &json!({"questions": [{"question": "?"}]})),
            ToolOutcome::Questions(_)
        ));
        let (_dir, build) = registry(Mode::Build);
        assert_eq!(
            build.execute("read_file", &json!({"path": "a.txt", "offset": 2})),
            ToolOutcome::text("     2\ttwo\n[lines 2-2 of 2; end of file]")
        );
    }
}
