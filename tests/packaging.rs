//! `make install` (issue #26 item 9): the binary, its man page and the shell completions land
//! under PREFIX (and DESTDIR), and each is what `man` and the shells load.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn has(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `sh -c script`, returning its standard output; fails the test on a non-zero exit.
fn shell(program: &str, script: &str) -> String {
    let out = Command::new(program).args(["-c", script]).output().unwrap();
    assert!(
        out.status.success(),
        "{program} -c {script}: {}",
        stderr(&out)
    );
    stdout(&out)
}

fn make_install(prefix: &Path, destdir: Option<&Path>) {
    let mut make = Command::new("make");
    make.current_dir(repo())
        .arg("--no-print-directory")
        .arg("install-files")
        .arg(format!("BIN={}", bin()))
        .arg(format!("PREFIX={}", prefix.display()));
    if let Some(d) = destdir {
        make.arg(format!("DESTDIR={}", d.display()));
    }
    let out = make.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn make_install_puts_the_binary_man_page_and_completions_under_prefix() {
    if !has("make") {
        eprintln!("skipped: no make");
        return;
    }
    let root = std::env::temp_dir().join(format!("roce-sniff-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    make_install(&root, None);

    let installed = root.join("bin/roce-sniff");
    let version = Command::new(&installed).arg("--version").output().unwrap();
    assert!(stdout(&version).starts_with("roce-sniff "), "{version:?}");

    let man_page = root.join("share/man/man1/roce-sniff.1");
    if has("man") {
        let page = shell(
            "sh",
            &format!("MANWIDTH=120 man -l {} 2>/dev/null", man_page.display()),
        );
        // Justified lines: words one space apart before looking.
        let page = page.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            page.contains("roce-sniff - RoCEv2 capture analyzer"),
            "{page}"
        );
        assert!(page.contains("--flow-timeout"), "{page}");
        // Its sections, as ripgrep's and fd's (#58 item 3).
        for section in [
            "SYNOPSIS roce-sniff [OPTIONS] -r FILE",
            "EXAMPLES",
            "EXIT STATUS",
            "SEE ALSO",
        ] {
            assert!(page.contains(section), "{section}: {page}");
        }
    }

    // bash: the function the script registers completes an option and a value.
    let bash = root.join("share/bash-completion/completions/roce-sniff");
    let completed = shell(
        "bash",
        &format!(
            "source {}; f=$(complete -p roce-sniff | sed 's/.*-F \\([^ ]*\\).*/\\1/'); \
             COMP_WORDS=(roce-sniff --flow-t); COMP_CWORD=1; $f roce-sniff --flow-t roce-sniff; \
             echo \"${{COMPREPLY[@]}}\"; \
             COMP_WORDS=(roce-sniff --generate ''); COMP_CWORD=2; $f roce-sniff '' --generate; \
             echo \"${{COMPREPLY[@]}}\"",
            bash.display()
        ),
    );
    assert_eq!(
        completed,
        "--flow-timeout\nman complete-bash complete-zsh complete-fish\n"
    );
    // Finding codes and levels, and the interfaces `roce-sniff -D` lists (#58 item 4): the
    // installed binary first in PATH, as it is for a user.
    let path = format!(
        "{}:{}",
        root.join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let complete = |words: &str| {
        shell(
            "bash",
            &format!(
                "export PATH={path}; source {}; \
                 f=$(complete -p roce-sniff | sed 's/.*-F \\([^ ]*\\).*/\\1/'); \
                 COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
                 $f roce-sniff \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
                 echo \"${{COMPREPLY[@]}}\"",
                bash.display()
            ),
        )
    };
    assert_eq!(complete("roce-sniff --finding psn_l"), "psn_loss\n");
    assert_eq!(complete("roce-sniff --fail-on crit"), "critical\n");
    assert_eq!(complete("roce-sniff --fail-on pfc_s"), "pfc_storm\n");
    // Each code of a comma list, the codes before it kept.
    assert_eq!(
        complete("roce-sniff --finding psn_loss,pfc_s"),
        "psn_loss,pfc_storm\n"
    );
    assert_eq!(
        complete("roce-sniff --fail-on icrc_bad,crit"),
        "icrc_bad,critical\n"
    );
    let interfaces = complete("roce-sniff -i ''");
    assert!(
        interfaces.split_whitespace().any(|i| i == "lo"),
        "{interfaces}"
    );
    assert_eq!(complete("roce-sniff --interface l"), "lo\n");

    let fish = root.join("share/fish/vendor_completions.d/roce-sniff.fish");
    if has("fish") {
        // What fish offers after `words`, the installed binary first in PATH.
        let fish_complete = |words: &str| {
            shell(
                "fish",
                &format!(
                    "set -x PATH {} $PATH; source {}; complete -C '{words}'",
                    root.join("bin").display(),
                    fish.display()
                ),
            )
        };
        let completed = fish_complete("roce-sniff --flow-t");
        assert!(completed.starts_with("--flow-timeout\t"), "{completed}");
        // One line per option: a summary, not the paragraph --help gives.
        assert_eq!(
            fish_complete("roce-sniff --fin"),
            "--finding\tKeep the connections and frames of findings of these codes\n"
        );
        let codes = fish_complete("roce-sniff --fail-on war");
        assert!(codes.starts_with("warning\t"), "{codes}");
        let listed = fish_complete("roce-sniff --finding psn_loss,pfc_s");
        assert_eq!(
            listed
                .lines()
                .map(|l| l.split('\t').next().unwrap())
                .collect::<Vec<_>>(),
            ["psn_loss,pfc_storm"],
            "{listed}"
        );
        let interfaces = fish_complete("roce-sniff -i l");
        assert!(
            interfaces
                .lines()
                .any(|l| l.split('\t').next() == Some("lo")),
            "{interfaces}"
        );
    } else {
        eprintln!("fish not installed: its completion is not loaded");
    }
    let zsh_dir = root.join("share/zsh/site-functions");
    if has("zsh") {
        let registered = shell(
            "zsh",
            &format!(
                "fpath=({} $fpath); autoload -Uz compinit; compinit -u -d {}/zcompdump; \
                 print -r -- ${{_comps[roce-sniff]}}",
                zsh_dir.display(),
                root.display()
            ),
        );
        assert_eq!(registered.trim(), "_roce-sniff");
        // The script parses, and its interface function is where the -i value calls it.
        let script = zsh_dir.join("_roce-sniff");
        shell("zsh", &format!("zsh -n {}", script.display()));
        let text = std::fs::read_to_string(&script).unwrap();
        assert!(text.contains(":IFACE:_roce_sniff_interfaces'"));
        assert!(text.contains("_roce_sniff_interfaces() {"));
        // The codes offered, each of a comma list (`_sequence`).
        assert!(text.contains(":CODE,...:_sequence compadd - psn_loss "));
        assert!(
            text.contains(":LEVEL|CODE,...:_sequence compadd - critical warning info psn_loss ")
        );
        // And as a user meets it: typed into an interactive zsh, Tab pressed. A sequence's
        // comma stays as zsh's removable suffix (a space takes it away).
        if has("tmux") {
            let zsh = InteractiveZsh::start(&root, &zsh_dir);
            // clap's zsh script offers an option that takes a value with its `=`.
            assert_eq!(zsh.complete("roce-sniff --fin"), "roce-sniff --finding=");
            assert_eq!(
                zsh.complete("roce-sniff --finding psn_l"),
                "roce-sniff --finding psn_loss,"
            );
            assert_eq!(
                zsh.complete("roce-sniff --finding psn_loss,pfc_s"),
                "roce-sniff --finding psn_loss,pfc_storm,"
            );
            assert_eq!(
                zsh.complete("roce-sniff --fail-on crit"),
                "roce-sniff --fail-on critical,"
            );
            assert_eq!(zsh.complete("roce-sniff -i l"), "roce-sniff -i lo ");
        } else {
            eprintln!("tmux not installed: zsh's completion is not driven");
        }
    } else {
        eprintln!("zsh not installed: its completion is not loaded");
    }

    // DESTDIR stages the same tree under another root, for packagers.
    let stage = root.join("stage");
    make_install(Path::new("/usr"), Some(&stage));
    assert!(stage.join("usr/bin/roce-sniff").is_file());
    assert!(stage.join("usr/share/man/man1/roce-sniff.1").is_file());

    let out = Command::new("make")
        .current_dir(repo())
        .args(["--no-print-directory", "uninstall"])
        .arg(format!("PREFIX={}", root.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!installed.exists() && !man_page.exists() && !bash.exists() && !fish.exists());
    let _ = std::fs::remove_dir_all(&root);
}

/// An interactive zsh in a detached tmux session, the installed binary first in PATH and its
/// completion loaded by compinit, as in a user's shell.
struct InteractiveZsh {
    session: String,
}

impl InteractiveZsh {
    fn start(root: &Path, site_functions: &Path) -> InteractiveZsh {
        let home = root.join("zsh-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join(".zshrc"),
            format!(
                "PATH={}:$PATH\nfpath=({} $fpath)\nautoload -Uz compinit\n\
                 compinit -u -d {}/zcompdump\nPS1='> '\n",
                root.join("bin").display(),
                site_functions.display(),
                home.display()
            ),
        )
        .unwrap();
        let session = format!("roce-sniff-zsh-{}", std::process::id());
        let zsh = format!("env ZDOTDIR={} zsh -i", home.display());
        tmux(&[
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "120",
            "-y",
            "20",
            &zsh,
        ]);
        let shell = InteractiveZsh { session };
        shell.wait_for_line(|l| l == "> ");
        shell
    }

    /// The command line after typing `line` and pressing Tab.
    fn complete(&self, line: &str) -> String {
        tmux(&["send-keys", "-t", &self.session, "C-u", line, "Tab"]);
        let typed = format!("> {line}");
        // Completion has come once the line grew past what was typed.
        let shown = self.wait_for_line(|l| l.starts_with(&typed) && l.len() > typed.len());
        shown.strip_prefix("> ").unwrap_or(&shown).to_string()
    }

    /// The cursor's line once `done` holds for it, within ten seconds.
    fn wait_for_line(&self, done: impl Fn(&str) -> bool) -> String {
        let started = std::time::Instant::now();
        loop {
            let line = self.cursor_line();
            if done(&line) {
                return line;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "zsh's line stayed {line:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// The line the cursor is on, up to the cursor.
    fn cursor_line(&self) -> String {
        let at = tmux(&[
            "display",
            "-p",
            "-t",
            &self.session,
            "#{cursor_y} #{cursor_x}",
        ]);
        let (y, x) = at.trim().split_once(' ').unwrap();
        let (y, x): (usize, usize) = (y.parse().unwrap(), x.parse().unwrap());
        let pane = tmux(&["capture-pane", "-p", "-t", &self.session]);
        let line = pane.lines().nth(y).unwrap_or("").trim_end();
        // capture-pane drops a line's trailing spaces: the cursor tells how far it runs (past
        // the space a completed word ends with).
        format!("{line:<x$}")
    }
}

impl Drop for InteractiveZsh {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .output();
    }
}

/// Runs tmux; its standard output (a failure fails the test).
fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().unwrap();
    assert!(out.status.success(), "tmux {args:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn generate_needs_no_capture_and_refuses_what_it_does_not_know() {
    let man = run(&["--generate", "man"]);
    assert_eq!(man.status.code(), Some(0), "{}", stderr(&man));
    assert!(stdout(&man).contains(".TH roce-sniff 1"));
    let bad = run(&["--generate", "powershell"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = stderr(&bad);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("powershell"), "{err}");
}

#[test]
fn a_completion_script_cut_short_by_a_pipe_ends_quietly() {
    let out = Command::new("sh")
        .args([
            "-c",
            &format!(
                "{} --generate complete-bash | head -1; echo \"${{PIPESTATUS:-}}\"",
                bin()
            ),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 2, "{}", stdout(&out));
}
