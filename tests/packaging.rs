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
