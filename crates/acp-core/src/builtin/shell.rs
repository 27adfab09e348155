//! How a `terminal/create` becomes a process, as in Zed, the host ACP
//! agents are written against: a `command` with `args` is a program,
//! started directly (its arguments reach it as they are); a `command`
//! alone is a command line (`"echo ok > out.txt"`, `"ls | wc -l"`), run
//! by the shell: `/bin/sh -c LINE` on Unix (Zed's choice too, rather than
//! `$SHELL`: agents write POSIX lines, and fish or nu would not run them),
//! `cmd.exe /d /s /c "LINE"` on Windows (`%ComSpec%`, quoted as Node's
//! `shell: true` does). Hosts that want no shell switch it off: a line
//! that needs one is then refused, a bare program name still runs.

use super::error::BuiltinError;

/// The process to start for one terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub program: String,
    pub args: Vec<String>,
    /// Windows: `args` go onto the command line as they are (cmd.exe
    /// parses its own line; the usual quoting would garble it).
    pub verbatim_args: bool,
}

/// What runs for `command` and `args`; `shell`: whether command lines are
/// allowed.
pub fn invocation(command: &str, args: &[String], shell: bool) -> Result<Invocation, BuiltinError> {
    let direct = || Invocation {
        program: command.to_string(),
        args: args.to_vec(),
        verbatim_args: false,
    };
    if !args.is_empty() {
        return Ok(direct());
    }
    if shell {
        return Ok(shell_line(command));
    }
    if is_plain_word(command) {
        return Ok(direct());
    }
    Err(BuiltinError::shell_disabled(command))
}

#[cfg(not(windows))]
fn shell_line(line: &str) -> Invocation {
    Invocation {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), line.into()],
        verbatim_args: false,
    }
}

#[cfg(windows)]
fn shell_line(line: &str) -> Invocation {
    let comspec = std::env::var("ComSpec")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "cmd.exe".into());
    // /d: no AutoRun commands from the registry; /s /c "…": cmd strips the
    // outer quotes and runs the rest as typed.
    Invocation {
        program: comspec,
        args: vec!["/d".into(), "/s".into(), "/c".into(), format!("\"{line}\"")],
        verbatim_args: true,
    }
}

/// A program name or path that means the same with or without a shell:
/// nothing a shell would split, expand, redirect or chain on.
fn is_plain_word(command: &str) -> bool {
    const SHELL_SYNTAX: &str = "|&;<>()$`\\\"'*?[]{}#~=%^!";
    #[cfg(windows)]
    let syntax = |c: char| SHELL_SYNTAX.contains(c) && c != '\\';
    #[cfg(not(windows))]
    let syntax = |c: char| SHELL_SYNTAX.contains(c);
    !command.chars().any(|c| c.is_whitespace() || syntax(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_with_args_is_started_directly() {
        let args = vec!["a b".to_string(), "$HOME".to_string()];
        for shell in [true, false] {
            let run = invocation("echo", &args, shell).unwrap();
            assert_eq!(run.program, "echo");
            assert_eq!(run.args, args);
            assert!(!run.verbatim_args);
        }
    }

    #[cfg(not(windows))]
    #[test]
    fn a_command_alone_is_a_shell_line() {
        let run = invocation("echo ok > out.txt", &[], true).unwrap();
        assert_eq!(run.program, "/bin/sh");
        assert_eq!(run.args, ["-c", "echo ok > out.txt"]);
    }

    #[test]
    fn without_a_shell_a_line_is_refused_and_a_bare_program_runs() {
        let err = invocation("echo ok > out.txt", &[], false).unwrap_err();
        assert_eq!(err.reason, "shellDisabled");
        assert!(invocation("ls | wc", &[], false).is_err());
        assert!(invocation("A=1", &[], false).is_err());
        let run = invocation("pwd", &[], false).unwrap();
        assert_eq!((run.program.as_str(), run.args.len()), ("pwd", 0));
        assert!(invocation("/usr/bin/env", &[], false).is_ok());
    }
}
