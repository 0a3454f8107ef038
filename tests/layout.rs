//! The house's rules (docs/design.md, "Rules"): data flows one way, so each folder of `src/`
//! names the `crate::` paths it must not import. `#[cfg(test)]` items and modules are exempt:
//! a test may build what it checks from anything.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Folder of `src/` -> the top-level modules it must not import.
const RULES: &[(&str, &[&str])] = &[
    // Outputs read values: the model, the decoded summary, the parsers and common.
    (
        "outputs",
        &["analysis", "source", "pipeline", "run", "cli", "correlate"],
    ),
    // The analysis hands out values; it knows nothing of who reads them or where frames
    // come from.
    (
        "analysis",
        &["outputs", "source", "pipeline", "run", "cli", "correlate"],
    ),
    (
        "decode",
        &[
            "analysis",
            "outputs",
            "source",
            "pipeline",
            "run",
            "cli",
            "correlate",
        ],
    ),
    // The model and common import nothing above them.
    (
        "model",
        &[
            "analysis",
            "outputs",
            "source",
            "pipeline",
            "run",
            "cli",
            "correlate",
            "decode",
        ],
    ),
    (
        "common",
        &[
            "analysis",
            "outputs",
            "source",
            "pipeline",
            "run",
            "cli",
            "correlate",
            "decode",
            "model",
        ],
    ),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, but those a parent declares under `#[cfg(test)]`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut test_only = BTreeSet::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in &entries {
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(path).unwrap();
            test_only.extend(test_only_modules(&text));
        }
    }
    for path in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        if test_only.contains(&stem) {
            continue;
        }
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The modules a file declares under `#[cfg(test)]` (`#[cfg(test)] pub mod testing;`).
fn test_only_modules(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0] == "#[cfg(test)]")
        .filter_map(|w| {
            let decl = w[1].strip_prefix("pub ").unwrap_or(w[1]);
            let name = decl.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.to_string())
        })
        .collect()
}

/// The code of `text`: comments, string and char literals blanked, `#[cfg(test)]` items
/// (a module, a function, a `use`) left out.
fn code_of(text: &str) -> String {
    let blanked = blank_comments_and_literals(text);
    let mut code = String::with_capacity(blanked.len());
    let mut rest = blanked.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        code.push_str(&rest[..at]);
        rest = &rest[at + "#[cfg(test)]".len()..];
        rest = &rest[end_of_item(rest)..];
    }
    code.push_str(rest);
    code
}

/// Where the item that begins `text` ends: its `;` or the brace that closes its body.
fn end_of_item(text: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            ';' if depth == 0 => return i + 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// `text` with its comments and the contents of its string and char literals replaced by
/// spaces (braces in them would unbalance `end_of_item`; paths in them are not imports).
fn blank_comments_and_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let end = text[i..].find("*/").map_or(b.len(), |n| i + n + 2);
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'r' && (b[i..].starts_with(b"r\"") || b[i..].starts_with(b"r#")) {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let start = i + 2 + hashes;
            let end = text[start..]
                .find(&close)
                .map_or(b.len(), |n| start + n + close.len());
            blank(&mut out, start, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            blank(&mut out, i + 1, i + 2);
            i += 3;
        } else if b[i..].starts_with(b"'\\") {
            let end = text[i + 1..].find('\'').map_or(b.len(), |n| i + 1 + n);
            blank(&mut out, i + 1, end);
            i = end + 1;
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The top-level modules `code` imports through `crate::` (`crate::a::b`, `crate::{a, b}`).
fn imported_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..end_of_group(group)];
            for part in split_top_level(inner) {
                found.insert(first_segment(part.trim()));
            }
        } else {
            found.insert(first_segment(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

/// The length of a `{...}` group's contents (`text` starts after its `{`).
fn end_of_group(text: &str) -> usize {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// `a::{b, c}, d` split at its top-level commas.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn first_segment(path: &str) -> String {
    path.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Each file of `folder` that imports a forbidden module, with the modules.
fn breaches(folder: &str, forbidden: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for path in rust_files(&src().join(folder)) {
        let code = code_of(&std::fs::read_to_string(&path).unwrap());
        let bad: Vec<String> = imported_modules(&code)
            .into_iter()
            .filter(|m| forbidden.contains(&m.as_str()))
            .collect();
        if !bad.is_empty() {
            let shown = path.strip_prefix(src()).unwrap().display();
            found.push(format!(
                "src/{shown} imports crate::{}",
                bad.join(", crate::")
            ));
        }
    }
    found
}

#[test]
fn each_folder_imports_only_what_its_rule_allows() {
    let found: Vec<String> = RULES
        .iter()
        .flat_map(|(folder, forbidden)| breaches(folder, forbidden))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Outputs read values, and so do their tests: they build the model values they check
/// (`model::testing`); a test of an output fed by a real analysis sits where the two are
/// wired, in `run/`.
#[test]
fn the_outputs_tests_do_not_run_the_analysis_either() {
    let mut found = Vec::new();
    for path in rust_files(&src().join("outputs")) {
        let text = blank_comments_and_literals(&std::fs::read_to_string(&path).unwrap());
        if imported_modules(&text).contains("analysis") {
            found.push(path.strip_prefix(src()).unwrap().display().to_string());
        }
    }
    assert!(
        found.is_empty(),
        "tests import crate::analysis in {found:?}"
    );
}

/// The outputs of `outputs/`: each a file or a folder there.
fn outputs() -> Vec<String> {
    let dir = src().join("outputs");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "mod.rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

/// `crate::outputs::NAME` paths in `code` (the `Output` trait and its values, in
/// `outputs/mod.rs`, are what every output shares).
fn outputs_imported(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::outputs::") {
        rest = &rest[at + "crate::outputs::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..end_of_group(group)];
            found.extend(
                split_top_level(inner)
                    .into_iter()
                    .map(|p| first_segment(p.trim())),
            );
        } else {
            found.insert(first_segment(rest));
        }
    }
    found
}

#[test]
fn no_output_imports_another() {
    let names = outputs();
    let mut found = Vec::new();
    for own in &names {
        let path = src().join("outputs").join(own);
        let files = match path.is_dir() {
            true => rust_files(&path),
            false => vec![path.with_extension("rs")],
        };
        for file in files {
            let code = code_of(&std::fs::read_to_string(&file).unwrap());
            for other in outputs_imported(&code) {
                if &other != own && names.contains(&other) {
                    let shown = file.strip_prefix(src()).unwrap().display();
                    found.push(format!("src/{shown} imports crate::outputs::{other}"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The checks above see what they must: a test module's import is exempt, the same import
/// outside one is not, and neither a comment nor a string counts.
#[test]
fn the_rules_see_imports_and_exempt_tests() {
    let text = r#"
use crate::model::Report;
use crate::{common::error::Error, decode::{summary::PacketSummary}};
// crate::analysis in a comment
const S: &str = "crate::source in a string {";
#[cfg(test)]
pub fn only_for_tests() -> crate::run::X { crate::pipeline::y() }
#[cfg(test)]
mod tests {
    use crate::analysis::Analyzer;
    fn f() { let c = '{'; }
}
fn g() -> crate::cli::Config { todo!() }
"#;
    let imported = imported_modules(&code_of(text));
    let expected: BTreeSet<String> = ["model", "common", "decode", "cli"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(imported, expected);
    assert_eq!(
        test_only_modules("#[cfg(test)]\npub mod testing;\npub mod timeline;"),
        ["testing"]
    );
}
