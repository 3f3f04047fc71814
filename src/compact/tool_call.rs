//! A compact step's MCP tools (DESIGN §15): a small model does not hold an agent loop, so it
//! is not offered tools to call. It makes a structured decision instead (which of the step's
//! tools, with which arguments, as JSON under a schema the server enforces), tick checks the
//! decision against the step's approved `tools:` and the tool's own input schema, calls the
//! tool itself, and the result goes back to the model before its edits, like the compact
//! executor's edits are decided by the model and made by tick.
//!
//! Pure: the schema, the asks and the checks. The calls are the runner's
//! (`runner/compact.rs`), through the step's registry, whose MCP selection refuses a tool the
//! step does not name whatever the decision said.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::llm::ToolSpec;

/// How much of a tool's result the model is shown (a small model's context is small).
pub const SHOWN_RESULT_BYTES: usize = 4 * 1024;

/// One MCP tool a step may call, as the compact executor shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepTool {
    /// `SERVER.TOOL`, as the plan names it.
    pub qualified: String,
    /// `mcp__SERVER__TOOL`, as the registry runs it.
    pub model_name: String,
    pub description: String,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

/// The step's MCP tools among `specs` (the step registry's, which offers exactly the tools
/// the approved plan names).
pub fn step_tools(specs: &[ToolSpec]) -> Vec<StepTool> {
    specs
        .iter()
        .filter_map(|spec| {
            let (server, tool) = crate::mcp::split_model_name(&spec.name)?;
            Some(StepTool {
                qualified: format!("{server}.{tool}"),
                model_name: spec.name.clone(),
                description: spec.description.clone(),
                parameters: spec.parameters.clone(),
            })
        })
        .collect()
}

/// The schema of a tool decision: `tool`, one of the step's (an `enum` the server's grammar
/// enforces; tick checks again whatever the server did), and its `arguments` object.
pub fn tool_schema(tools: &[StepTool]) -> Value {
    let names: Vec<&str> = tools.iter().map(|t| t.qualified.as_str()).collect();
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["tool", "arguments"],
        "properties": {
            "tool": {"type": "string", "enum": names},
            "arguments": {"type": "object"},
        },
    })
}

/// A tool decision as the model answers it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolDecision {
    pub tool: String,
    #[serde(default)]
    pub arguments: Value,
}

/// The ask for a tool decision: the step's tools with their descriptions and arguments'
/// schemas; `step` is said again next to it.
pub fn tool_instruction(step: &str, tools: &[StepTool]) -> String {
    let mut text =
        format!("The step: {step}\nBefore the edits, this step calls a tool. Its tools:\n");
    for tool in tools {
        text.push_str(&format!(
            "- `{}`: {}; arguments: {}\n",
            tool.qualified,
            crate::tasks::render::one_line(&tool.description),
            tool.parameters
        ));
    }
    text.push_str(
        "Decide the call as JSON: `tool` (one of the names above) and `arguments` (an object \
         that fits the tool's arguments). tick calls it and shows you the result.",
    );
    text
}

/// The decision checked against the step's tools: the name the registry runs it by, or why
/// it is refused (for the model). A tool the step does not name is left to the registry,
/// which refuses it with the reason; a tool it names gets its arguments checked against the
/// tool's own input schema before anything is sent to the server.
pub fn check_decision(decision: &ToolDecision, tools: &[StepTool]) -> Result<String, String> {
    let wanted = decision.tool.trim();
    let Some(tool) = tools.iter().find(|t| t.qualified == wanted) else {
        // `mcp__SERVER__TOOL` for the registry's refusal, whatever form the model wrote.
        let name = match wanted.split_once('.') {
            Some((server, tool)) => format!("{}{server}__{tool}", crate::mcp::PREFIX),
            None => wanted.to_owned(),
        };
        return Ok(name);
    };
    let arguments = if decision.arguments.is_null() {
        json!({})
    } else {
        decision.arguments.clone()
    };
    let mut problems = Vec::new();
    crate::llm::structured::check(&tool.parameters, &arguments, "", &mut problems);
    if problems.is_empty() {
        Ok(tool.model_name.clone())
    } else {
        Err(format!(
            "the arguments of `{}` do not fit its schema: {}",
            tool.qualified,
            problems.join("; ").replace("the answer", "`arguments`")
        ))
    }
}

/// What the model hears of a call: the result (cut to [`SHOWN_RESULT_BYTES`]) or the error.
pub fn result_note(qualified: &str, result: &str, is_error: bool) -> String {
    let mut shown = result.to_owned();
    if shown.len() > SHOWN_RESULT_BYTES {
        let mut end = SHOWN_RESULT_BYTES;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        let more = shown.len() - end;
        shown.truncate(end);
        shown.push_str(&format!("\n[... {more} more bytes]"));
    }
    if is_error {
        format!("The tool `{qualified}` was not called or failed: {shown}\n\n")
    } else {
        format!("The tool `{qualified}` answered:\n{shown}\n\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search() -> StepTool {
        StepTool {
            qualified: "t.search".to_owned(),
            model_name: "mcp__t__search".to_owned(),
            description: "Search the notes".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            }),
        }
    }

    fn decision(tool: &str, arguments: Value) -> ToolDecision {
        ToolDecision {
            tool: tool.to_owned(),
            arguments,
        }
    }

    #[test]
    fn the_step_tools_are_its_mcp_specs_by_the_plans_names() {
        let specs = [
            ToolSpec {
                name: "write_file".to_owned(),
                description: String::new(),
                parameters: json!({}),
            },
            ToolSpec {
                name: "mcp__t__search".to_owned(),
                description: "Search the notes".to_owned(),
                parameters: search().parameters,
            },
        ];
        assert_eq!(step_tools(&specs), [search()]);
        assert_eq!(
            tool_schema(&[search()])["properties"]["tool"]["enum"],
            json!(["t.search"])
        );
    }

    #[test]
    fn a_decision_is_checked_against_the_tools_schema_and_others_go_to_the_refusal() {
        let tools = [search()];
        assert_eq!(
            check_decision(&decision("t.search", json!({"query": "q"})), &tools),
            Ok("mcp__t__search".to_owned())
        );
        assert_eq!(
            check_decision(&decision("t.search", json!({"query": 3})), &tools),
            Err(
                "the arguments of `t.search` do not fit its schema: `query` should be of type \
                 string"
                    .to_owned()
            )
        );
        assert_eq!(
            check_decision(&decision("t.search", Value::Null), &tools),
            Err(
                "the arguments of `t.search` do not fit its schema: `arguments` has no `query`"
                    .to_owned()
            )
        );
        // Not the step's: the registry refuses it, by its model name.
        assert_eq!(
            check_decision(&decision("t.crash", json!({})), &tools),
            Ok("mcp__t__crash".to_owned())
        );
    }

    #[test]
    fn a_long_result_is_cut_for_the_model() {
        let note = result_note("t.big", &"x".repeat(SHOWN_RESULT_BYTES + 10), false);
        assert!(note.starts_with("The tool `t.big` answered:\nxxx"));
        assert!(note.ends_with("\n[... 10 more bytes]\n\n"), "{note}");
        assert_eq!(
            result_note("t.crash", "it stopped", true),
            "The tool `t.crash` was not called or failed: it stopped\n\n"
        );
    }
}
