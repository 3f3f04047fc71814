use proptest::prelude::*;
use serde_json::json;

use super::*;

fn calls(text: &str) -> Vec<(String, Value)> {
    parse(text)
        .into_iter()
        .map(|f| match f {
            Found::Call(c) => (c.name, c.arguments),
            other => panic!("not a call: {other:?} in {text:?}"),
        })
        .collect()
}

fn one_error(text: &str) -> String {
    match parse(text).as_slice() {
        [Found::Malformed { error }] => error.clone(),
        other => panic!("expected one malformed block, got {other:?} for {text:?}"),
    }
}

#[test]
fn a_tool_call_block() {
    let text = "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n</tool_call>";
    assert_eq!(
        calls(text),
        vec![("read_file".into(), json!({"path": "src/lib.rs"}))]
    );
}

#[test]
fn a_tool_call_block_without_its_closing_tag_at_the_end() {
    let text = "<tool_call>{\"name\": \"list_files\", \"arguments\": {}}";
    assert_eq!(calls(text), vec![("list_files".into(), json!({}))]);
}

#[test]
fn fenced_json_and_bare_fences() {
    for fence in ["```json", "```", "```JSON", "````json", "```tool_call"] {
        let close = "`".repeat(fence.chars().take_while(|c| *c == '`').count());
        let text = format!(
            "Here is the plan:\n\n{fence}\n{{\"name\": \"submit_plan\", \"arguments\": {{\"title\": \"T\"}}}}\n{close}\n\nDone."
        );
        assert_eq!(
            calls(&text),
            vec![("submit_plan".into(), json!({"title": "T"}))],
            "{fence}"
        );
    }
}

#[test]
fn fences_as_small_models_place_them() {
    let text = "I will call ```json\n{\"name\": \"list_files\", \"arguments\": {}}```\nand wait.";
    assert_eq!(calls(text), vec![("list_files".into(), json!({}))]);
    // Inline code with triple backticks does not open a block that swallows the real one.
    let text = "Run ```cargo test``` first.\n```json\n{\"name\": \"list_files\"}\n```";
    assert_eq!(calls(text), vec![("list_files".into(), json!({}))]);
}

#[test]
fn a_fence_holding_a_tool_call_block() {
    let text = "```\n<tool_call>\n{\"name\": \"list_files\", \"arguments\": {\"path\": \".\"}}\n</tool_call>\n```";
    assert_eq!(
        calls(text),
        vec![("list_files".into(), json!({"path": "."}))]
    );
}

#[test]
fn a_tool_call_block_holding_a_fence() {
    let text =
        "<tool_call>\n```json\n{\"name\": \"list_files\", \"arguments\": {}}\n```\n</tool_call>";
    assert_eq!(calls(text), vec![("list_files".into(), json!({}))]);
}

#[test]
fn the_shapes_small_models_give_arguments() {
    let expected = vec![("read_file".to_owned(), json!({"path": "a.rs", "limit": 5}))];
    for args in [
        r#""arguments": {"path": "a.rs", "limit": 5}"#,
        r#""arguments": "{\"path\": \"a.rs\", \"limit\": 5}""#,
        r#""arguments": [ {"path": "a.rs", "limit": 5} ]"#,
        r#""parameters": {"path": "a.rs", "limit": 5}"#,
        r#""parameters": [{"path": "a.rs", "limit": 5}]"#,
    ] {
        let text = format!("```json\n{{\"name\": \"read_file\", {args}}}\n```");
        assert_eq!(calls(&text), expected, "{args}");
    }
}

#[test]
fn missing_or_empty_arguments_are_an_empty_object() {
    for text in [
        r#"<tool_call>{"name": "list_files"}</tool_call>"#,
        r#"<tool_call>{"name": "list_files", "arguments": null}</tool_call>"#,
        r#"<tool_call>{"name": "list_files", "arguments": ""}</tool_call>"#,
    ] {
        assert_eq!(
            calls(text),
            vec![("list_files".into(), json!({}))],
            "{text}"
        );
    }
}

#[test]
fn the_openai_wire_shape_is_read_too() {
    let text = r#"<tool_call>{"type": "function", "function": {"name": "list_files", "arguments": "{}"}}</tool_call>"#;
    assert_eq!(calls(text), vec![("list_files".into(), json!({}))]);
}

#[test]
fn several_calls_in_one_reply_keep_their_order() {
    let text = "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\nthen\n```json\n{\"name\": \"b\", \"arguments\": {\"x\": 1}}\n{\"name\": \"c\"}\n```\n<tool_call>[{\"name\": \"d\"}, {\"name\": \"e\"}]</tool_call>";
    let names: Vec<String> = calls(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
}

#[test]
fn a_reply_that_is_only_the_call_object() {
    let text = "  {\"name\": \"list_files\", \"arguments\": {\"path\": \"src\"}}\n";
    assert_eq!(
        calls(text),
        vec![("list_files".into(), json!({"path": "src"}))]
    );
    // Prose that happens to be a JSON object is not a call.
    assert!(parse("{\"title\": \"x\"}").is_empty());
}

#[test]
fn a_call_inside_prose_without_blocks() {
    let text = "Here is the call: {\"name\": \"list_files\", \"arguments\": {\"path\": \"src\"}} and then {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}.";
    assert_eq!(
        calls(text),
        vec![
            ("list_files".into(), json!({"path": "src"})),
            ("read_file".into(), json!({"path": "a"}))
        ]
    );
    // Only objects that open with `name` and are well-formed calls count.
    assert!(parse("The config is {\"path\": \"x\", \"name\": \"y\"}.").is_empty());
    assert!(parse("Broken: {\"name\": \"x\", \"arguments\": {").is_empty());
    // With a block in the reply, prose JSON is not read.
    let text = "{\"name\": \"a\", \"arguments\": {}} and\n```rust\nfn x() {}\n```";
    assert!(parse(text).is_empty());
}

#[test]
fn code_and_prose_are_not_calls() {
    for text in [
        "",
        "I will now read the file.",
        "```rust\nfn main() { println!(\"{}\", 1); }\n```",
        "```\nfn main() {}\n```",
        "```\n{ not json at all }\n```",
        "Use `{\"name\": 1}` inline, which is not a block.",
        "```bash\ncargo test\n```",
    ] {
        assert_eq!(parse(text), Vec::new(), "{text}");
    }
}

#[test]
fn an_object_without_a_name_is_reported_as_unnamed() {
    let found = parse("```json\n{\"title\": \"T\", \"steps\": []}\n```");
    let [Found::Unnamed(map)] = found.as_slice() else {
        panic!("{found:?}");
    };
    assert_eq!(map["title"], "T");
}

#[test]
fn broken_json_is_located_in_the_reply() {
    let error = one_error(
        "Plan:\n<tool_call>\n{\"name\": \"submit_plan\", \"arguments\": {\"title\": }}\n</tool_call>",
    );
    assert!(error.starts_with("the JSON at line 3, column "), "{error}");
    assert!(error.contains("not valid"), "{error}");
    // A fenced block marked json, or one that reads like a call, is also reported.
    let error = one_error("```json\n{\"name\": \"x\", \"arguments\": {\n```");
    assert!(error.contains("line 3, column 1"), "{error}");
    let error = one_error("```\n{\"name\": \"x\", \"arguments\": {,}}\n```");
    assert!(error.contains("not valid"), "{error}");
}

#[test]
fn trailing_commas_are_forgiven_and_nothing_else() {
    let text = "```json\n{\"name\": \"submit_plan\", \"arguments\": {\"title\": \"a, }\", \"steps\": [1, 2,],},}\n```";
    assert_eq!(
        calls(text),
        vec![(
            "submit_plan".into(),
            json!({"title": "a, }", "steps": [1, 2]})
        )]
    );
    // Two objects in one block, the first with a trailing comma: each read once.
    let text =
        "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": 1,}}\n{\"name\": \"b\"}</tool_call>";
    let names: Vec<String> = calls(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b"]);
    // Other slips are still errors.
    let error = one_error("<tool_call>{'name': 'a'}</tool_call>");
    assert!(error.contains("not valid"), "{error}");
}

#[test]
fn extra_keys_get_a_precise_correction() {
    let error = one_error(r#"<tool_call>{"name": "read_file", "path": "a.rs"}</tool_call>"#);
    assert_eq!(
        error,
        "the call to `read_file` has the key `path` beside `name` and `arguments`; every \
         argument goes inside `arguments`: {\"arguments\":{\"path\":\"a.rs\"},\"name\":\"read_file\"}"
    );
}

#[test]
fn wrong_shapes_say_what_is_wrong() {
    for (text, expected) in [
        (
            r#"<tool_call>{"name": 3}</tool_call>"#,
            "`name` must be the tool's name as a string, not `3`",
        ),
        (
            r#"<tool_call>{"name": "a", "arguments": {}, "parameters": {}}</tool_call>"#,
            "the call to `a` has both `arguments` and `parameters`; write only `arguments`",
        ),
        (
            r#"<tool_call>{"name": "a", "arguments": [{}, {}]}</tool_call>"#,
            "`arguments` of the call to `a` is a list of 2 items; it must be one JSON object",
        ),
        (
            r#"<tool_call>{"name": "a", "arguments": "[1]"}</tool_call>"#,
            "`arguments` of the call to `a` is a string holding `[1]`, not a JSON object",
        ),
        (
            r#"<tool_call>{"name": "a", "parameters": 7}</tool_call>"#,
            "`parameters` of the call to `a` must be a JSON object, not `7`",
        ),
        (
            "<tool_call>read_file src/lib.rs</tool_call>",
            "the block at line 1, column 12 of your answer does not start with `{`; it must hold one JSON object",
        ),
        (
            "<tool_call>\n</tool_call>",
            "the block is empty; it must hold one JSON object",
        ),
    ] {
        assert_eq!(one_error(text), expected, "{text}");
    }
}

#[test]
fn positions_count_characters_not_bytes() {
    let error = one_error("é\n<tool_call>ü{</tool_call>");
    assert!(
        error.starts_with("the block at line 2, column 12"),
        "{error}"
    );
}

/// Renders a call in each of the documented forms.
fn forms(name: &str, args: &Value) -> Vec<String> {
    let object = json!({"name": name, "arguments": args}).to_string();
    let as_string = json!({"name": name, "arguments": args.to_string()}).to_string();
    let as_list = json!({"name": name, "arguments": [args]}).to_string();
    vec![
        format!("<tool_call>{object}</tool_call>"),
        format!("Sure.\n<tool_call>\n{as_string}\n</tool_call>\n"),
        format!("```json\n{as_list}\n```"),
        format!("Text before.\n```\n{object}\n```\nText after."),
        object,
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        // Any text, backticks, tags and non-ASCII included: JSON escapes keep it inside.
        "\\PC{0,12}".prop_map(Value::from),
        Just(Value::from("</tool_call> ``` ü")),
    ]
}

fn json_args() -> impl Strategy<Value = Value> {
    let value = json_leaf().prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,5}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop::collection::btree_map("[a-z_]{1,8}", value, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

proptest! {
    #[test]
    fn every_form_reads_back_the_same_call(name in "[a-z_]{1,12}", args in json_args()) {
        for text in forms(&name, &args) {
            prop_assert_eq!(calls(&text), vec![(name.clone(), args.clone())], "{}", text);
        }
    }

    #[test]
    fn valid_json_is_never_repaired(args in json_args()) {
        prop_assert_eq!(without_trailing_commas(&args.to_string()), None);
        prop_assert_eq!(without_trailing_commas(&serde_json::to_string_pretty(&args).unwrap()), None);
    }

    #[test]
    fn any_text_parses_without_panicking(text in "\\PC{0,200}") {
        let _ = parse(&text);
    }

    #[test]
    fn prose_without_blocks_or_braces_is_never_a_call(text in "[^`<{}]{0,200}") {
        prop_assert!(parse(&text).is_empty());
    }

    #[test]
    fn a_cut_reply_never_yields_more_calls_than_the_whole(
        name in "[a-z_]{1,12}", args in json_args(), cut in 0_usize..400
    ) {
        let text = format!("<tool_call>{}</tool_call>", json!({"name": name, "arguments": args}));
        let mut at = cut.min(text.len());
        while !text.is_char_boundary(at) { at -= 1; }
        let prefix = &text[..at];
        let got = parse(prefix).into_iter().filter(|f| matches!(f, Found::Call(_))).count();
        prop_assert!(got <= 1);
        if got == 1 {
            // Only a prefix that still holds the whole object is read as the call.
            let got: Vec<Found> = parse(prefix).into_iter().filter(|f| matches!(f, Found::Call(_))).collect();
            prop_assert_eq!(got, vec![Found::Call(TextCall { name, arguments: args })]);
        }
    }
}
