//! The committed completion scripts in `completions/` must match what the
//! binary generates (regenerate with `completions/generate.sh`).

use crate::support::{dsh, root};

#[test]
fn committed_completions_are_current() {
    for (shell, file) in [("bash", "dsh.bash"), ("zsh", "_dsh"), ("fish", "dsh.fish")] {
        let generated = dsh().args(["completions", shell]).output().unwrap();
        assert!(generated.status.success());
        let committed = std::fs::read(root().join("completions").join(file)).unwrap_or_else(|_| {
            panic!("completions/{file} is missing: run completions/generate.sh")
        });
        assert!(
            generated.stdout == committed,
            "completions/{file} is stale: run completions/generate.sh and commit the result"
        );
    }
}

#[test]
fn help_explains_every_command() {
    let out = dsh().arg("--help").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for cmd in ["surface", "messages", "header", "events", "completions"] {
        assert!(text.contains(cmd), "--help lists {cmd}");
    }
    assert!(text.contains("Exit status"));
}

#[test]
fn every_subcommand_help_has_examples_and_speaks_of_dsh() {
    for cmd in [
        "surface",
        "messages",
        "header",
        "measure",
        "events",
        "load",
        "prune",
        "compact",
        "verify",
        "locks",
        "sessions",
        "usage",
        "pack",
        "unpack",
        "completions",
    ] {
        for flag in ["-h", "--help"] {
            let out = dsh().args([cmd, flag]).output().unwrap();
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            let examples = text
                .split_once("Examples:")
                .unwrap_or_else(|| panic!("dsh {cmd} {flag} has examples"))
                .1;
            let n = examples
                .lines()
                .filter(|l| l.trim_start().starts_with("dsh ") || l.contains("| dsh "))
                .count();
            assert!((2..=4).contains(&n), "dsh {cmd} {flag}: {n} examples");
            assert!(text.contains("Global options:"), "dsh {cmd} {flag}");
            for internal in ["oracle", "rc.8"] {
                assert!(!text.contains(internal), "dsh {cmd} {flag} says {internal}");
            }
        }
    }
}
