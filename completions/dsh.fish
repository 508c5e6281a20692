# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_dsh_global_optspecs
    string join \n json lenient q/quiet color= no-pager raw home= max-line-bytes= max-decompressed= h/help V/version
end

function __fish_dsh_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_dsh_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_dsh_using_subcommand
    set -l cmd (__fish_dsh_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c dsh -n "__fish_dsh_needs_command" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_needs_command" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_needs_command" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_needs_command" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_needs_command" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_needs_command" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_needs_command" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_needs_command" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_needs_command" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_needs_command" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "surface" -d 'Show the current surface: the ordered nodes the model sees'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "messages" -d 'Show the messages the model sees (deriveMessages), in surface order'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "header" -d 'Show the folded request header and the latest route / context window'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "measure" -d 'Measure context pressure exactly as the DSH harness does'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "events" -d 'Show the raw log as a human transcript'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "view" -d 'Show the log\'s transcript beside what the model sees at one point'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "load" -d 'Show what reading produced: header, event counts, closers, tolerances'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "prune" -d 'Prune oversized tool results exactly as the reference does, appended to the log'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "compact" -d 'Compact a session log: summarise its oldest history through a model and replace it with one checkpoint'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "verify" -d 'Audit logs against every check of the compaction spec (all violations)'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "locks" -d 'List compaction locks (matched, stale, busy) and release a crashed one'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "repair" -d 'Cut a log whose end a crash damaged back to its last whole frame or line'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "sessions" -d 'List sessions: project, id, title, times, size, pressure, locks, cost'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "usage" -d 'Token usage and cost, by day, week, month, session or project'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "cache" -d 'Show what each model request could reuse from the provider\'s prompt cache'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "simulate" -d 'Replay a recorded session under another compaction policy'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "report" -d 'Write a session as one self-contained HTML page, or a home as a dashboard with one page per session'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "health" -d 'Find what hurts sessions: compaction loops, lost context read again, failed summaries, overflows, cache churn, stale locks, abandoned turns'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "export" -d 'Export sessions as tables: sessions, requests, compactions, prunes, locks, findings'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "pack" -d 'Write a log as the harness stores it: a multi-frame `.jsonl.zstd` artifact'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "unpack" -d 'Write an artifact\'s lines back as a plain JSONL log'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "statusline" -d 'One line for a prompt or a status bar: pressure, the next compaction, cost'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "watch" -d 'Follow a session as it is written: pressure, the next compaction, cost'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "completions" -d 'Print shell completions'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l limit -d 'Show only the first N rows' -r
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l tail -d 'Show only the last N rows' -r
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l width -d 'Cut each text block to this many characters in the readable view (0: no limit)' -r
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l limit -d 'Show only the first N rows' -r
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l tail -d 'Show only the last N rows' -r
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l system -d 'Also print the folded system prompt first (readable view only)'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l request -d 'Show the request projection: offloaded images (generation 3) become the placeholder text the model receives instead of the stored block'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand header" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand header" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand header" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand header" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand header" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand header" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand header" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand header" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand header" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand header" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand header" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l tokenizer -d 'Also count with a real tokenizer: the envelope and surface text (o200k, cl100k), or the request as DeepSeek renders it (deepseek-v4)' -r -f -a "o200k\t''
cl100k\t''
deepseek-v4\t''"
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l at -d 'Measure the log as it stood after the event with this seq' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l header-json -d 'Measure against this request header instead of the latest logged one (JSON text, or @FILE): `{"config": {...}, "system"?, "tools"?}`' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l route -d 'Resolve the policy for this PROVIDER/MODEL instead of the routed target' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l context-window -d 'Context window to use instead of the config / logged one' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l config -d 'The dsh config file (default: $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml, else ~/.config/dsh/config.toml)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand measure" -s j -l jobs -d 'Logs measured at once when there are many (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l nodes -d 'Show the per-node table (position, seq, type, tokens)'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l fill -d 'Where the tokens go: the surface by what fills it (conversation, summaries, reasoning, tool calls and results by tool name with the largest results and their seqs); adds `fill` to --json'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l fail-over -d 'Exit 1 when any log is at or over its compaction threshold (refused logs then exit 3 only when none could be measured)'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand events" -s t -l type -d 'Only events of these types (a trailing `/` matches a family, e.g. `tool/`)' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l turn -d 'Only events of this turn' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l width -d 'Cut previews to this many characters (default: what fits the terminal, 100 into a pipe)' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l limit -d 'Show only the first N rows' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l tail -d 'Show only the last N rows' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l debug-hold-bytes -d 'Test hook: rows the one-pass view may hold (bytes) before it reads the log a second time' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand events" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand events" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -s a -l all -d 'Show every event, log-only ones (chunks, steps, headers…) included'
complete -c dsh -n "__fish_dsh_using_subcommand events" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand events" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand events" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand events" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand events" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand events" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand events" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand view" -l at -d 'The log as it stood after this seq' -r
complete -c dsh -n "__fish_dsh_using_subcommand view" -l tokenizer -d 'Also count the model\'s view with a real tokenizer: the envelope and surface text (o200k, cl100k), or the request as DeepSeek renders it (deepseek-v4)' -r -f -a "o200k\t''
cl100k\t''
deepseek-v4\t''"
complete -c dsh -n "__fish_dsh_using_subcommand view" -l limit -d 'Show only the first N rows' -r
complete -c dsh -n "__fish_dsh_using_subcommand view" -l tail -d 'Show only the last N rows' -r
complete -c dsh -n "__fish_dsh_using_subcommand view" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand view" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand view" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand view" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand view" -l survival -d 'Print the survival figures of each compaction instead of the columns'
complete -c dsh -n "__fish_dsh_using_subcommand view" -s a -l all -d 'Every event on the left, chunks and steps included'
complete -c dsh -n "__fish_dsh_using_subcommand view" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand view" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand view" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand view" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand view" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand view" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand view" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand load" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand load" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand load" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand load" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand load" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand load" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand load" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand load" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand load" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand load" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand load" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l out -d 'Write a copy of the log with the appends to FILE (which must not exist) instead of touching the log' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l threshold-chars -d 'Prune a result whose text exceeds this many code points (reference `thresholdChars`; overrides the config\'s)' -r
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l head-chars -d 'Code points kept at the head (reference `headChars`; overrides the config\'s)' -r
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l tail-chars -d 'Code points kept at the tail (reference `tailChars`; overrides the config\'s)' -r
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l config -d 'The dsh config file whose [pruner] budgets apply (default: $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml, else ~/.config/dsh/config.toml)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l tokenizer -d 'Also count the tokens saved with a real BPE encoding (repeatable)' -r -f -a "o200k\t''
cl100k\t''
deepseek-v4\t''"
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l wait -d 'Wait up to SECONDS for another dsh writer to release the log' -r
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l time -d 'Stamp appended events with this time (epoch milliseconds)' -r
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l debug-write-pause-ms -d 'Test hook: pause this long between the steps of the write' -r
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand prune" -s n -l dry-run -d 'Show what would be appended; write nothing'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l allow-closed-turn -d 'Write even though no turn is open at the end of the log (the result is a log the reference\'s session invariant flags)'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l resume -d 'Start a new lifecycle even when the last turn is open (crash-repair closers and session/end-seed first, as the reference\'s resumed session; the pairs then land outside any turn)'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l events -d 'With --dry-run: print the batch as the JSON lines it would append'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand prune" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l route -d 'Summarisation target `PROVIDER/MODEL` (default: the config\'s summarization pair, else the route of the latest request/header)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l mode -d 'Semantics for a log with an open turn (ignored otherwise: manual)' -r -f -a "auto\t'Manual without an open turn, pressure with one'
pressure\t'Threshold, prune, retain budget, retries'
overflow\t'Prune, retain 0, one bracket'"
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l out -d 'Write to a copy of the log at FILE (must not exist) instead of the log' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l config -d 'The dsh config file (default: $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml, else ~/.config/dsh/config.toml)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l kind -d 'Wire protocol of the route (default: the route\'s `kind`, else deepseek)' -r -f -a "deepseek\t'DeepSeek chat completions'
anthropic\t'Anthropic-compatible Messages'"
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l base-url -d 'Base URL (default: the route\'s `baseURL`, else `$DEEPSEEK_BASE_URL`, else `https://api.deepseek.com`, plus `/anthropic` for `--kind anthropic`)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l api-key-env -d 'Environment variable holding the API key (default: the route\'s `apiKeyEnv`, else DEEPSEEK_API_KEY)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l reasoning-effort -d 'Reasoning effort for the summary call (`off`, `low`, `high`, `max`; default: the route\'s `reasoningEffort`, else `high`)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l context-window -d 'Context window of the routed target (default: the config\'s model entry, else the latest matching request/context, else the config\'s route default, else 1000000 for deepseek-official)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l threshold-ratio -d '`thresholdRatio` (default: the config\'s, else 0.8)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l retain-ratio -d '`retainRatio` (mutually exclusive with --retain-tokens; default: the config\'s, else 0.16)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l retain-tokens -d '`retainTokens`: absolute recent-tail budget' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l max-tokens -d '`maxTokens`: the summary generation cap (default: the config\'s, else 8192)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l compaction-retries -d '`compactionRetries`: extra pressure attempts (default: the config\'s, else 1)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l max-overflow-retries -d '`maxOverflowRetries`: 0 disables `--mode overflow` (default: the config\'s, else 1)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l source-command-id -d '`sourceCommandId` to record (manual compaction)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l timeout -d 'Stream idle timeout in seconds' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l retries -d 'Retries after HTTP 429 / 5xx / connection failures' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l retry-delay -d 'First retry delay in seconds (doubles per retry)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l wait -d 'Wait up to SECONDS for another dsh writer holding the log' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l images -d 'Images in the summarised range: `refuse` (the reference: a text-only route cannot send them, so nothing is written) or `placeholder` (a dsh extension: each image is sent as the harness\'s image-offload placeholder text, so the summariser knows one was there)' -r -f -a "refuse\t'Refuse a range with images (nothing is written)'
placeholder\t'Send each image as the image-offload placeholder text'"
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l summarizer-context-window -d 'Context window of the summarising model (default: --context-window when it is the routed target, else the config\'s model entry, else the latest matching request/context, else the route default, else 1000000 for deepseek-official)' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand compact" -s n -l dry-run -d 'Show the range, the tokens it would shadow and the exact request; call no one, write nothing (events it would append are stamped with the log\'s last event time, so the output is reproducible)'
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand compact" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand compact" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand compact" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand compact" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l format -d 'Output: a grouped report, JSON (same as --json), or GitHub workflow annotations (`::error file=…,line=…::…`)' -r -f -a "human\t'Grouped, readable report'
json\t'One JSON document'
github\t'GitHub Actions workflow commands'"
complete -c dsh -n "__fish_dsh_using_subcommand verify" -s j -l jobs -d 'Logs checked at once (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l config -d 'The dsh config file whose [pruner] budgets V-PRV-10 uses (default: $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml, else ~/.config/dsh/config.toml)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l all -d 'Audit every session under $DSH_HOME'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l deny-warnings -d 'Warnings count as violations (exit 1)'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l exit-zero -d 'Exit 0 even when violations are found (refused logs still exit 3), for report-only CI steps and comparisons with the reference, whose verification succeeds with a list of violations'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l list-checks -d 'Print every check (id, severity, spec section, reference package, what it requires) and exit'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand verify" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l wait -d 'With --release: wait up to SECONDS for another dsh writer' -r
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l out -d 'With --release: append to a copy of the log at FILE (must not exist) instead of the log itself; no confirmation is asked' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l time -d 'With --release: stamp the marker with this time (epoch ms) instead of now' -r
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l now -d 'Measure ages from this time (epoch ms) instead of the clock; with --json it implies --age' -r
complete -c dsh -n "__fish_dsh_using_subcommand locks" -s j -l jobs -d 'Logs read in parallel (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l release -d 'Release the live lock of one LOG (append the session/end-seed marker)'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -s y -l yes -d 'Do not ask before releasing'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -s n -l dry-run -d 'With --release: show what would be appended; write nothing'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l age -d 'With --json: give each lock\'s age (`ageMs`), measured from the clock (or from --now). The table always shows ages'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l all -d 'List every bracket and every log, matched and free ones too (the table lists only busy, stale and orphaned locks by default; --json always holds every log)'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand locks" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l wait -d 'Wait up to SECONDS for another dsh writer\'s lock' -r
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand repair" -s n -l dry-run -d 'Say what would be cut; write nothing'
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l force -d 'Repair even though the log was modified in the last 10 seconds (never while another dsh holds its lock)'
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand repair" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand repair" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand repair" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand repair" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l project -l cwd -d 'Only sessions recorded in this directory (the header\'s cwd) or below it' -r
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l since -d 'From this date or time on (2026-07-01 or 20260701, 2026-07-01T09:30Z), or this long back from now (7d, 2w, 12h)' -r
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l until -d 'Before this date or time (or this long back from now)' -r
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l tz -d 'The time zone dates are shown and typed in (default: the local one, from $TZ, else the system\'s): UTC, a fixed offset such as +08:00, or a zone name such as Asia/Shanghai (read from $TZDIR, else /usr/share/zoneinfo)' -r
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l sort -d 'Order: started and activity oldest first; pressure, size and cost largest first. Unknown values last' -r -f -a "started\t'Start time'
activity\t'Last activity'
pressure\t'Pressure'
size\t'Size on disk'
cost\t'Cost'"
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l limit -d 'Show only the first N rows of the order (refused logs, which come last, count too)' -r
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l config -d 'The dsh config file (routes\' context windows, [[prices]])' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -s j -l jobs -d 'Logs read at once (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l busy -d 'Only sessions holding a live compaction lock (see `dsh locks`)'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l utc -d 'Show and type dates in UTC (the same as --tz UTC)'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l reverse -d 'Turn the order round (unknown values stay last)'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l csv -d 'Print CSV (a header row, then one row per session)'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l csv-formulas -d 'With CSV: write cells that begin with = + - @ tab or CR as they are. By default such a cell (a number aside) gets a leading `\'` so a spreadsheet shows it as text instead of evaluating it (OWASP\'s advice against CSV injection)'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l tree -d 'Draw the delegation forest: each session under its parent (forks, subagents), with each subtree\'s requests and cost rolled up'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand sessions" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l cwd -d 'Only sessions recorded in this directory (the header\'s cwd) or below it' -r
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l since -d 'From this date or time on (2026-07-01 or 20260701, 2026-07-01T09:30Z), or this long back from now (7d, 2w, 12h)' -r
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l until -d 'Before this date or time (or this long back from now)' -r
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l tz -d 'The time zone dates are shown and typed in (default: the local one, from $TZ, else the system\'s): UTC, a fixed offset such as +08:00, or a zone name such as Asia/Shanghai (read from $TZDIR, else /usr/share/zoneinfo)' -r
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l config -d 'The dsh config file ([[prices]])' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand usage" -s j -l jobs -d 'Logs read at once (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l daily -d 'Per day (the default)'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l weekly -d 'Per week (Monday to Sunday, labelled with its Monday)'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l monthly -d 'Per month'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l session -d 'Per session'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l project -d 'Per project (the header\'s cwd)'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l breakdown -d 'Also show each group per provider and model'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l utc -d 'Show and type dates in UTC (the same as --tz UTC)'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l csv -d 'Print CSV (a header row, then one row per group, or per group and model with --breakdown)'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l csv-formulas -d 'With CSV: write cells that begin with = + - @ tab or CR as they are. By default such a cell (a number aside) gets a leading `\'` so a spreadsheet shows it as text instead of evaluating it (OWASP\'s advice against CSV injection)'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l prices -d 'Show the price table (built in and from the config) instead'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l offline -d 'Accepted and always in effect: prices are never fetched'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand usage" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l tokenizer -d 'Count positions with a real tokenizer instead of the heuristic (deepseek-v4: the request as DeepSeek renders it, in its tokens)' -r -f -a "o200k\t''
cl100k\t''
deepseek-v4\t''"
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l by -d 'Group: `cause` prints only the misses by cause' -r -f -a "cause\t''"
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l lifetime -d 'Cache lifetime of an unused entry (e.g. 300s, 5m, 1h); idle gaps longer than this expire it, when the log\'s times are real. Default: never' -r
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l cross-session-lifetime -d 'With several logs (a home, a directory, many LOGs): how long a prefix one session left stays usable by another after its last use (e.g. 30m, 6h, 2d; 0 turns the cross-session cache off). DeepSeek\'s cache is per account and publishes no lifetime: this is an assumption' -r
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l block -d 'DeepSeek\'s storage granularity: hits are whole multiples of this' -r
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l anthropic-breakpoints -d 'Where the `cache_control` breakpoints of Anthropic requests sit: `none` (what DSH\'s adapters send: nothing is cached), or up to 4 of `tools`, `system`, `first-user`, `prev-user`, `last`, comma-separated, each with an optional TTL (`last:5m`, `tools:1h`). Anthropic\'s prompt is tools → system → messages, and longer TTLs must come first in it. Default: `anthropicBreakpoints` in the config\'s [cache], else none' -r -f
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l anthropic-ttl -d 'The TTL of breakpoints given without one (here or in the config): 5m (the API\'s default) or 1h' -r -f -a "5m\t''
1h\t''"
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l config -d 'The dsh config file whose [[prices]] join the built-in price table and whose [cache] anthropicBreakpoints is the default layout (default: $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml, else ~/.config/dsh/config.toml)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand cache" -s j -l jobs -d 'Logs analysed at once (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l calibrate -d 'Rescale token positions and sizes by each session\'s measured ratio of the provider-reported prompt size to dsh\'s (over its requests with usage); the output says so. Sessions without usage stay unscaled'
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand cache" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand cache" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand cache" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand cache" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l threshold-ratio -d 'Threshold as a share of the window (≥ 1: never fires below the window)' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l retain-ratio -d 'Retained tail as a share of the window' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l retain-tokens -d 'Retained tail in tokens' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l context-window -d 'The routed target\'s context window' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l threshold-chars -d 'Pruner: results longer than this many code points are pruned' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l head-chars -d 'Pruner: code points kept at the head' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l tail-chars -d 'Pruner: code points kept at the tail' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l summary-tokens -d 'Every simulated summary is this many tokens' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l summary-ratio -d 'Every simulated summary is this share of the tokens it shadows' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l sweep -d 'A grid: `threshold=FROM:TO:STEP,retain=FROM:TO:STEP`' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l config -d 'The dsh config file (policy, pruner, [[prices]])' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l tokenizer -d 'Count requests as the provider does for overflows, cache and billed input (deepseek-v4: the request as DeepSeek renders it, in its tokens); compaction thresholds stay on DSH\'s estimate' -r -f -a "o200k\t''
cl100k\t''
deepseek-v4\t''"
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l no-prune -d 'Do not prune'
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l steps -d 'Per-step detail: pressure before and after each replacement'
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand simulate" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand report" -s o -l out -d 'The page (one LOG; `-` for standard output) or the directory (many)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand report" -l max-points -d 'Draw at most N points per per-request chart (downsampling beyond)' -r
complete -c dsh -n "__fish_dsh_using_subcommand report" -l tz -d 'The time zone of the pages\' times and days: UTC, a fixed offset such as +08:00, or a zone name such as Asia/Shanghai (default: $TZ, else the system\'s zone)' -r
complete -c dsh -n "__fish_dsh_using_subcommand report" -l config -d 'A dsh config file (policy, capacities, prices)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand report" -l tokenizer -d 'Also chart each request\'s prompt counted with a real tokenizer (deepseek-v4: the request as DeepSeek renders it) beside DSH\'s estimate and the reported prompt' -r -f -a "o200k\t''
cl100k\t''
deepseek-v4\t''"
complete -c dsh -n "__fish_dsh_using_subcommand report" -s j -l jobs -d 'Logs read at once (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand report" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand report" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand report" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand report" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand report" -l force -d 'Replace existing files'
complete -c dsh -n "__fish_dsh_using_subcommand report" -l no-view -d 'Leave out the side-by-side view and the survival figures (the replaced spans are not read again)'
complete -c dsh -n "__fish_dsh_using_subcommand report" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand report" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand report" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand report" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand report" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand report" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand report" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand health" -l fail-on -d 'Exit 1 when a finding of this severity or worse is found' -r -f -a "warn\t'Any finding'
error\t'An error finding'"
complete -c dsh -n "__fish_dsh_using_subcommand health" -l loop-compactions -d 'compaction-loop: this many landed compactions…' -r
complete -c dsh -n "__fish_dsh_using_subcommand health" -l loop-requests -d '…within this many agent requests' -r
complete -c dsh -n "__fish_dsh_using_subcommand health" -l reread-min-tokens -d 'lost-context-reread: only results of at least this many tokens' -r
complete -c dsh -n "__fish_dsh_using_subcommand health" -l churn-breaks -d 'cache-churn: more prefix-breaking header changes than this' -r
complete -c dsh -n "__fish_dsh_using_subcommand health" -l idle -d 'abandoned-turn: a turn open at the end counts after the log has been idle this long (300s, 30m, 1h)' -r
complete -c dsh -n "__fish_dsh_using_subcommand health" -l config -d 'The dsh config file (routes\' context windows and policies, [[prices]])' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand health" -s j -l jobs -d 'Logs read at once (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand health" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand health" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand health" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand health" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand health" -l all -d 'List sessions without findings too'
complete -c dsh -n "__fish_dsh_using_subcommand health" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand health" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand health" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand health" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand health" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand health" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand health" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand export" -l home-label -d 'Another home, labelled NAME in every table\'s `home` column (repeat for each developer\'s home)' -r
complete -c dsh -n "__fish_dsh_using_subcommand export" -l format -d 'The tables\' format' -r -f -a "parquet\t'Apache Parquet (Snappy)'
csv\t'CSV with a header row'
jsonl\t'JSON Lines'"
complete -c dsh -n "__fish_dsh_using_subcommand export" -s o -l out -d 'The directory to write (created; one file per table)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand export" -l config -d 'The dsh config file (routes\' context windows, [[prices]])' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand export" -s j -l jobs -d 'Logs read at once (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand export" -l tokenizer -d 'Also count each agent request\'s prompt with a real tokenizer (deepseek-v4: the request as DeepSeek renders it), in the requests table\'s provider_* columns' -r -f -a "o200k\t''
cl100k\t''
deepseek-v4\t''"
complete -c dsh -n "__fish_dsh_using_subcommand export" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand export" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand export" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand export" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand export" -l incremental -d 'Hive-style partitions and a manifest; later runs read only new or grown logs and append (Parquet only)'
complete -c dsh -n "__fish_dsh_using_subcommand export" -l force -d 'Replace OUT when it exists and is not empty (not with --incremental, which extends it)'
complete -c dsh -n "__fish_dsh_using_subcommand export" -s n -l dry-run -d 'Read everything and report what would be written, writing nothing'
complete -c dsh -n "__fish_dsh_using_subcommand export" -l csv-formulas -d 'With --format csv: write cells that begin with = + - @ tab or CR as they are. By default such a cell (a number aside) gets a leading `\'` so a spreadsheet shows it as text instead of evaluating it (OWASP\'s advice against CSV injection)'
complete -c dsh -n "__fish_dsh_using_subcommand export" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand export" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand export" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand export" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand export" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand export" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand pack" -s o -l out -d 'Where to write the artifact (`-` for standard output, not a terminal)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l lines -d 'One frame per N lines instead of one per turn' -r
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l force -d 'Replace OUT if it exists'
complete -c dsh -n "__fish_dsh_using_subcommand pack" -s n -l dry-run -d 'Convert and report the sizes, writing nothing'
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand pack" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand pack" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand pack" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand pack" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -s o -l out -d 'Where to write the plain log (`-` for standard output)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -l force -d 'Replace OUT if it exists'
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -s n -l dry-run -d 'Convert and report the sizes, writing nothing'
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand unpack" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l format -d 'The line\'s template (see above)' -r
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l config -d 'The dsh config file (routes\' context windows and policies, [[prices]])' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l tz -d 'The zone "today" is in (default: the local one): UTC, +08:00, or a zone name' -r
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l no-cache -d 'Read everything whole; neither use nor update the cache'
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l utc -d 'Count today in UTC'
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand statusline" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l interval -d 'How often to look at the log (e.g. 250ms, 2s)' -r
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l config -d 'The dsh config file (routes\' context windows and policies, [[prices]])' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l color -d 'When to color the output: auto (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t'Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always color, even into a pipe or file'
never\t'Never color'"
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l home -d 'DSH home directory for session ids and cwds (default `$DSH_HOME` when set and not empty, else `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l max-line-bytes -d 'Refuse a log with a line longer than this (bytes; suffixes K, M, G, T in powers of 1024). Default 64M: far above any real event, low enough that a line that never ends cannot exhaust memory' -r
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l max-decompressed -d 'Refuse a Zstandard log that decompresses to more than this (bytes; suffixes K, M, G, T). Default 64G' -r
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand watch" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l no-pager -d 'Do not page long output (surface, messages, events, verify, compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`'
complete -c dsh -n "__fish_dsh_using_subcommand watch" -l raw -d 'Print text from logs, paths and provider messages as it is, control characters included, instead of escaping them (`\\u{1b}`); for programs that want the bytes. JSON output is always JSON-escaped; standard error is always escaped'
complete -c dsh -n "__fish_dsh_using_subcommand watch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_using_subcommand watch" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand completions" -s h -l help -d 'Print help'
complete -c dsh -n "__fish_dsh_using_subcommand completions" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "surface" -d 'Show the current surface: the ordered nodes the model sees'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "messages" -d 'Show the messages the model sees (deriveMessages), in surface order'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "header" -d 'Show the folded request header and the latest route / context window'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "measure" -d 'Measure context pressure exactly as the DSH harness does'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "events" -d 'Show the raw log as a human transcript'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "view" -d 'Show the log\'s transcript beside what the model sees at one point'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "load" -d 'Show what reading produced: header, event counts, closers, tolerances'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "prune" -d 'Prune oversized tool results exactly as the reference does, appended to the log'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "compact" -d 'Compact a session log: summarise its oldest history through a model and replace it with one checkpoint'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "verify" -d 'Audit logs against every check of the compaction spec (all violations)'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "locks" -d 'List compaction locks (matched, stale, busy) and release a crashed one'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "repair" -d 'Cut a log whose end a crash damaged back to its last whole frame or line'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "sessions" -d 'List sessions: project, id, title, times, size, pressure, locks, cost'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "usage" -d 'Token usage and cost, by day, week, month, session or project'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "cache" -d 'Show what each model request could reuse from the provider\'s prompt cache'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "simulate" -d 'Replay a recorded session under another compaction policy'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "report" -d 'Write a session as one self-contained HTML page, or a home as a dashboard with one page per session'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "health" -d 'Find what hurts sessions: compaction loops, lost context read again, failed summaries, overflows, cache churn, stale locks, abandoned turns'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "export" -d 'Export sessions as tables: sessions, requests, compactions, prunes, locks, findings'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "pack" -d 'Write a log as the harness stores it: a multi-frame `.jsonl.zstd` artifact'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "unpack" -d 'Write an artifact\'s lines back as a plain JSONL log'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "statusline" -d 'One line for a prompt or a status bar: pressure, the next compaction, cost'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "watch" -d 'Follow a session as it is written: pressure, the next compaction, cost'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "completions" -d 'Print shell completions'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events view load prune compact verify locks repair sessions usage cache simulate report health export pack unpack statusline watch completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
