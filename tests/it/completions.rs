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
        // Nothing but the shell is offered after `completions`.
        let script = String::from_utf8(generated.stdout).unwrap();
        let after = match shell {
            "bash" => script
                .split_once("dsh__subcmd__completions)\n")
                .map(|(_, t)| t),
            "zsh" => script.split_once("(completions)\n").map(|(_, t)| t),
            _ => Some(script.as_str()),
        }
        .unwrap_or_else(|| panic!("completions/{file} has a `completions` entry"));
        let entry: String = match shell {
            "fish" => after
                .lines()
                .filter(|l| l.contains("__fish_dsh_using_subcommand completions\""))
                .collect(),
            _ => after.split(";;").next().unwrap().to_string(),
        };
        for global in ["json", "lenient", "color", "home"] {
            assert!(
                !entry.contains(global),
                "completions/{file} offers --{global} after `completions`: {entry}"
            );
        }
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
        "health",
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
            if cmd == "completions" {
                // The global options do nothing there: not shown.
                for global in ["Global options:", "--json", "--lenient", "--color"] {
                    assert!(!text.contains(global), "dsh {cmd} {flag} lists {global}");
                }
            } else {
                assert!(text.contains("Global options:"), "dsh {cmd} {flag}");
            }
            for internal in ["oracle", "rc.8"] {
                assert!(!text.contains(internal), "dsh {cmd} {flag} says {internal}");
            }
        }
    }
}
