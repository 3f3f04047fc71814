//! `write_file`: create or replace a whole file in the workspace, and the one write path that
//! `edit_file` shares.
//!
//! Writes go through [`crate::fsx::write_beneath`] (temp file, fsync, rename, permissions kept,
//! all within a directory opened by descriptor beneath the root), so a crash or a watcher
//! never sees half a file and a racing symlink swap cannot move the write. Every successful write is reported in the
//! outcome's [`Effects`] with the hash of what was written, for the runner's journal.

use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::workspace::{Access, Workspace};
use super::{FileWritten, PayloadLimits, ToolOutcome, count, parse_args, refuse_oversized};
use crate::fsx;
use crate::llm::ToolSpec;

pub const NAME: &str = "write_file";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: "Create a file, or replace a whole file, with `content`. Missing parent \
                      directories are created. To change part of an existing file use \
                      edit_file instead: it is safer and shorter. Files under `.git/` and \
                      `.tasks/` cannot be written."
            .to_owned(),
        parameters: string_params(&[
            PATH_PARAM,
            ("content", "The complete new content of the file."),
        ]),
    }
}

/// Runs the tool; `content` over `limits.max_write_bytes` is refused before it is copied.
pub fn run_within(
    workspace: &Workspace,
    arguments: &serde_json::Value,
    limits: PayloadLimits,
) -> ToolOutcome {
    run_writing(NAME, &["content"], arguments, limits, |args| {
        write(workspace, &args)
    })
}

/// The path argument of `write_file` and `edit_file`, with its description.
pub(crate) const PATH_PARAM: (&str, &str) = (
    "path",
    "Path relative to the workspace root, e.g. `src/lib.rs`.",
);

/// The parameters of `write_file` and `edit_file`: each of `fields` (name, description) a
/// string, all required, no other allowed.
pub(crate) fn string_params(fields: &[(&str, &str)]) -> serde_json::Value {
    let properties: serde_json::Map<String, serde_json::Value> = fields
        .iter()
        .map(|(name, description)| {
            let property = json!({ "type": "string", "description": description });
            ((*name).to_owned(), property)
        })
        .collect();
    let required: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// How `write_file` and `edit_file` run: any of the `payload` fields (text bound for a file)
/// over `limits.max_write_bytes` is refused before the arguments are copied, then they are
/// parsed and `body` writes; its text or error goes back to the model.
pub(crate) fn run_writing<A: DeserializeOwned>(
    tool: &str,
    payload: &[&str],
    arguments: &serde_json::Value,
    limits: PayloadLimits,
    body: impl FnOnce(A) -> Result<(String, FileWritten), String>,
) -> ToolOutcome {
    ToolOutcome::wrote(
        refuse_oversized(tool, arguments, payload, limits.max_write_bytes)
            .and_then(|()| parse_args(tool, arguments))
            .and_then(body),
    )
}

fn write(workspace: &Workspace, args: &Args) -> Result<(String, FileWritten), String> {
    let shown = &args.path;
    let path = workspace
        .resolve(shown, Access::Write)
        .map_err(|e| e.to_string())?;
    let (written, previous) = write_bytes(workspace, &path, shown, args.content.as_bytes())?;
    let what = match previous {
        None => "new file".to_owned(),
        Some(bytes) => format!("replaced {}", count_bytes(bytes)),
    };
    let text = format!(
        "wrote `{}`: {}, {} ({what})",
        written.path,
        count(line_count(&args.content), "line", "lines"),
        count_bytes(args.content.len() as u64),
    );
    Ok((text, written))
}

/// Write `content` to `path` (already resolved for [`Access::Write`]) atomically and say what
/// was written, and the size of the file it replaced. The write opens `path` again beneath
/// the root by descriptor, never by name ([`fsx::write_beneath`]): a directory swapped for a
/// symbolic link since `path` was resolved makes it fail, never land elsewhere. The error
/// text is for the model and names the path as the model wrote it (`shown`).
pub(crate) fn write_bytes(
    workspace: &Workspace,
    path: &Path,
    shown: &str,
    content: &[u8],
) -> Result<(FileWritten, Option<u64>), String> {
    let relative = path
        .strip_prefix(workspace.root())
        .map_err(|_| format!("`{shown}` is outside the workspace"))?;
    let replaced = fsx::write_beneath(workspace.root(), relative, shown, content)
        .map_err(|e| e.to_string())?;
    Ok((
        FileWritten::new(workspace.display(path), content),
        replaced.previous_len,
    ))
}

/// Lines as an editor counts them: a last line without a newline still counts.
pub(crate) fn line_count(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

pub(crate) fn count_bytes(bytes: u64) -> String {
    if bytes == 1 {
        "1 byte".to_owned()
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Effects;
    use crate::tools::test_support::output_of;
    use std::fs;
    use std::os::unix::fs::symlink;

    /// The tool with the default [`PayloadLimits`].
    fn run(workspace: &Workspace, arguments: &serde_json::Value) -> ToolOutcome {
        run_within(workspace, arguments, PayloadLimits::default())
    }

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(".git")).unwrap();
        fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn content_over_the_limit_is_refused_and_nothing_is_written() {
        let (dir, ws) = setup();
        let limits = PayloadLimits {
            max_write_bytes: 1024,
        };
        let big = json!({"path": "big.txt", "content": "x".repeat(1025)});
        let ToolOutcome::Output {
            text,
            is_error,
            effects,
        } = run_within(&ws, &big, limits)
        else {
            panic!("not an output");
        };
        assert!(is_error, "{text}");
        assert!(text.contains("over the limit of 1024 bytes"), "{text}");
        assert!(effects.is_empty());
        assert!(!dir.path().join("big.txt").exists());
        let fits = json!({"path": "big.txt", "content": "x".repeat(1024)});
        assert!(!matches!(
            run_within(&ws, &fits, limits),
            ToolOutcome::Output { is_error: true, .. }
        ));
    }

    /// The real size: a 1 GiB `content` is refused at once, and the refusal does not copy it.
    #[test]
    fn a_gigabyte_write_is_refused_fast() {
        let (dir, ws) = setup();
        let mut big = json!({"path": "huge.bin"});
        // Moved in, not copied: the test holds one gigabyte, as the agent would.
        big["content"] = serde_json::Value::String("x".repeat(1 << 30));
        let started = std::time::Instant::now();
        let outcome = run(&ws, &big);
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
        assert!(matches!(
            outcome,
            ToolOutcome::Output { is_error: true, .. }
        ));
        assert!(!dir.path().join("huge.bin").exists());
    }

    #[test]
    fn creates_parent_directories_and_reports_the_write() {
        let (dir, ws) = setup();
        let outcome = run(
            &ws,
            &json!({"path": "src/deep/new.rs", "content": "fn a() {}\nfn b() {}"}),
        );
        let written = fs::read_to_string(dir.path().join("src/deep/new.rs")).unwrap();
        assert_eq!(written, "fn a() {}\nfn b() {}");
        assert_eq!(
            outcome,
            ToolOutcome::Output {
                text: "wrote `src/deep/new.rs`: 2 lines, 19 bytes (new file)".to_owned(),
                is_error: false,
                effects: Effects {
                    files_written: vec![FileWritten {
                        path: "src/deep/new.rs".to_owned(),
                        blake3: blake3::hash(b"fn a() {}\nfn b() {}").to_hex().to_string(),
                    }],
                    ran_command: false,
                    exit_code: None,
                },
            }
        );
    }

    #[test]
    fn replaces_a_file_and_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, ws) = setup();
        let path = dir.path().join("run.sh");
        fs::write(&path, "#!/bin/sh\necho old\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        let outcome = run(&ws, &json!({"path": "./run.sh", "content": "x\n"}));
        let ToolOutcome::Output { text, is_error, .. } = outcome else {
            panic!("{outcome:?}");
        };
        assert!(!is_error);
        assert_eq!(text, "wrote `run.sh`: 1 line, 2 bytes (replaced 19 bytes)");
        assert_eq!(fs::read_to_string(&path).unwrap(), "x\n");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        // The write left no temporary file behind.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn writes_through_an_inside_symlink_to_the_real_file() {
        let (dir, ws) = setup();
        fs::create_dir(dir.path().join("real")).unwrap();
        symlink("real", dir.path().join("alias")).unwrap();
        let outcome = run(&ws, &json!({"path": "alias/f.txt", "content": ""}));
        assert_eq!(
            outcome.effects().unwrap().files_written[0].path,
            "real/f.txt"
        );
        assert_eq!(fs::read(dir.path().join("real/f.txt")).unwrap(), b"");
    }

    #[test]
    fn refuses_protected_and_outside_paths_and_writes_nothing() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("x"), "outside").unwrap();
        let (dir, ws) = setup();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        symlink(outside.path().join("x"), dir.path().join("out_file")).unwrap();
        let cases = [
            (
                ".git/config",
                "`.git/config` is inside `.git/`, which no tool may write",
            ),
            (
                ".tasks/x",
                "`.tasks/x` is inside `.tasks/`, which no tool may write",
            ),
            ("../outside", "`../outside` is outside the workspace"),
            ("/etc/x", "`/etc/x` is an absolute path"),
            (
                "out/x",
                "`out/x` leads outside the workspace through a symbolic link",
            ),
            ("out_file", "`out_file` leads outside the workspace"),
            ("", "the path is empty"),
        ];
        for (path, expected) in cases {
            let outcome = run(&ws, &json!({"path": path, "content": "pwned"}));
            let (text, is_error, effects) = output_of(outcome);
            assert!(is_error, "{path}");
            assert!(text.starts_with(expected), "{path}: {text}");
            assert!(effects.is_empty());
        }
        assert_eq!(
            fs::read_to_string(dir.path().join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert!(!dir.path().join(".tasks").exists());
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1);
        assert_eq!(
            fs::read_to_string(outside.path().join("x")).unwrap(),
            "outside"
        );
    }

    /// Issue 17, item 7: a process swapping a directory and a symbolic link
    /// (`renameat2(RENAME_EXCHANGE)`, atomic) while the model writes `d/TODO.md` over and over.
    /// Resolving by name and then reopening by name put the content in the task's TODO.md or
    /// outside the workspace within a few tries; opened by descriptor it lands in `d/` or the
    /// write fails.
    #[test]
    fn a_racing_symlink_swap_never_moves_a_write() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};

        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};

        let outside = tempfile::tempdir().unwrap();
        let (dir, ws) = setup();
        let root = dir.path();
        fs::create_dir_all(root.join(".tasks/t")).unwrap();
        fs::write(root.join(".tasks/t/TODO.md"), "- [ ] S2 the real step\n").unwrap();
        fs::create_dir(root.join("d")).unwrap();
        for (link, target) in [
            ("to_tasks", root.join(".tasks/t")),
            ("to_outside", outside.path().to_path_buf()),
        ] {
            symlink(&target, root.join(link)).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let swapper = {
                let stop = Arc::clone(&stop);
                let (d, l) = (root.join("d"), root.join(link));
                std::thread::spawn(move || {
                    let mut swaps = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        renameat2(AT_FDCWD, &d, AT_FDCWD, &l, RenameFlags::RENAME_EXCHANGE)
                            .unwrap();
                        swaps += 1;
                    }
                    swaps
                })
            };
            let mut landed = 0;
            for i in 0..10_000 {
                let content = format!("- [x] S2 the real step {i}\n");
                let outcome = run(&ws, &json!({"path": "d/TODO.md", "content": content}));
                if !matches!(outcome, ToolOutcome::Output { is_error: true, .. }) {
                    landed += 1;
                }
            }
            stop.store(true, Ordering::Relaxed);
            let swaps = swapper.join().unwrap();
            assert!(swaps > 100, "{link}: only {swaps} swaps");
            assert!(landed > 0, "{link}: no write got through");
            assert_eq!(
                fs::read_to_string(root.join(".tasks/t/TODO.md")).unwrap(),
                "- [ ] S2 the real step\n",
                "{link}: a write landed in `.tasks/`"
            );
            assert!(
                fs::read_dir(outside.path()).unwrap().next().is_none(),
                "{link}: a write landed outside the workspace"
            );
            // Whichever name holds the real directory now, it is the real one again as `d`.
            if fs::symlink_metadata(root.join("d"))
                .unwrap()
                .file_type()
                .is_symlink()
            {
                renameat2(
                    AT_FDCWD,
                    &root.join("d"),
                    AT_FDCWD,
                    &root.join(link),
                    RenameFlags::RENAME_EXCHANGE,
                )
                .unwrap();
            }
        }
        assert!(
            fs::read_to_string(root.join("d/TODO.md"))
                .unwrap()
                .starts_with("- [x] S2")
        );
        // No temp file left anywhere the writes went.
        let names: Vec<_> = fs::read_dir(root.join("d"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["TODO.md"]);
    }

    #[test]
    fn a_parent_directory_linked_outside_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let (dir, ws) = setup();
        fs::create_dir(dir.path().join("a")).unwrap();
        symlink(outside.path(), dir.path().join("a/b")).unwrap();
        let outcome = run(&ws, &json!({"path": "a/b/c/new.txt", "content": "x"}));
        assert!(
            matches!(&outcome, ToolOutcome::Output { is_error: true, text, .. } if text.contains("leads outside the workspace")),
            "{outcome:?}"
        );
        assert!(fs::read_dir(outside.path()).unwrap().next().is_none());
        // Reached by descriptor, a link is never followed even when the check passed.
        let err = fsx::write_beneath(ws.root(), Path::new("a/b/new.txt"), "a/b/new.txt", b"x")
            .unwrap_err();
        assert!(matches!(err, fsx::BeneathError::Moved { .. }), "{err}");
        let err = fsx::read_beneath(ws.root(), Path::new("a/b"), "a/b", 10).unwrap_err();
        assert!(matches!(err, fsx::BeneathError::Moved { .. }), "{err}");
        assert!(fs::read_dir(outside.path()).unwrap().next().is_none());
    }

    #[test]
    fn model_fixable_errors() {
        let (dir, ws) = setup();
        fs::create_dir(dir.path().join("src")).unwrap();
        fs::write(dir.path().join("file"), "").unwrap();
        let cases = [
            (
                json!({"path": "src", "content": "x"}),
                "`src` is a directory; give the path of a file inside it",
            ),
            (
                json!({"path": "file/x.rs", "content": "x"}),
                "`file/x.rs` cannot be created because `file` is a file, not a directory",
            ),
            (
                json!({"path": "a"}),
                "invalid arguments for write_file: missing field `content`",
            ),
            (
                json!({"path": "a", "content": "x", "mode": "0755"}),
                "invalid arguments for write_file: unknown field `mode`, expected `path` or `content`",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(run(&ws, &args), ToolOutcome::error(expected), "{args}");
        }
    }

    #[test]
    fn line_counts() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\r\nb"), 2);
        assert_eq!(line_count("\n\n"), 2);
    }
}
