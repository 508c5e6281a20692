# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_dsh_global_optspecs
    string join \n json lenient q/quiet home= h/help V/version
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

complete -c dsh -n "__fish_dsh_needs_command" -l home -d 'DSH home directory for session ids and cwds (default `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_needs_command" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_needs_command" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_needs_command" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dsh -n "__fish_dsh_needs_command" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "surface" -d 'Show the current surface: the ordered nodes the model sees'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "messages" -d 'Show the derived model-visible messages (deriveMessages)'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "header" -d 'Show the folded request header and the latest route / context window'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "measure" -d 'Measure context pressure (the harness\'s own figure), the routed compaction policy, and optional exact tokenizer counts'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "events" -d 'Show the human transcript of the raw log (append-origin events)'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "load" -d 'Show what reading produced: header, event counts, closers, tolerances'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "completions" -d 'Print shell completions'
complete -c dsh -n "__fish_dsh_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l home -d 'DSH home directory for session ids and cwds (default `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -s h -l help -d 'Print help'
complete -c dsh -n "__fish_dsh_using_subcommand surface" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l width -d 'Cut each text block to this many characters in the readable view (0: no limit)' -r
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l home -d 'DSH home directory for session ids and cwds (default `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l system -d 'Also print the folded system prompt first (readable view only)'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l request -d 'Show the request projection: offloaded images (generation 3) become the placeholder text the model receives instead of the stored block'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -s h -l help -d 'Print help'
complete -c dsh -n "__fish_dsh_using_subcommand messages" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand header" -l home -d 'DSH home directory for session ids and cwds (default `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand header" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand header" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand header" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand header" -s h -l help -d 'Print help'
complete -c dsh -n "__fish_dsh_using_subcommand header" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l tokenizer -d 'Also count the envelope and surface text with a real BPE tokenizer' -r -f -a "o200k\t''
cl100k\t''"
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l at -d 'Measure the log as it stood after the event with this seq' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l header-json -d 'Measure against this request header instead of the latest logged one (JSON text, or @FILE): `{"config": {...}, "system"?, "tools"?}`' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l route -d 'Resolve the policy for this PROVIDER/MODEL instead of the routed target' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l context-window -d 'Context window to use instead of the config / logged one' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l config -d 'The dsh config file (default: $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml, else ~/.config/dsh/config.toml)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand measure" -s j -l jobs -d 'Logs measured at once when there are many (0: one per core)' -r
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l home -d 'DSH home directory for session ids and cwds (default `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l nodes -d 'Show the per-node table (position, seq, type, tokens)'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l fail-over -d 'Exit 1 when any log is at or over its compaction threshold'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -s h -l help -d 'Print help'
complete -c dsh -n "__fish_dsh_using_subcommand measure" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand events" -s t -l type -d 'Only events of these types (a trailing `/` matches a family, e.g. `tool/`)' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l turn -d 'Only events of this turn' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l width -d 'Cut previews to this many characters' -r
complete -c dsh -n "__fish_dsh_using_subcommand events" -l home -d 'DSH home directory for session ids and cwds (default `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand events" -s a -l all -d 'Show every event, log-only ones (chunks, steps, headers…) included'
complete -c dsh -n "__fish_dsh_using_subcommand events" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand events" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand events" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand events" -s h -l help -d 'Print help'
complete -c dsh -n "__fish_dsh_using_subcommand events" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand load" -l home -d 'DSH home directory for session ids and cwds (default `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand load" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand load" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand load" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand load" -s h -l help -d 'Print help'
complete -c dsh -n "__fish_dsh_using_subcommand load" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand completions" -l home -d 'DSH home directory for session ids and cwds (default `~/.dsh`)' -r -F
complete -c dsh -n "__fish_dsh_using_subcommand completions" -l json -d 'Print machine-readable JSON (stable, documented shapes) instead of tables'
complete -c dsh -n "__fish_dsh_using_subcommand completions" -l lenient -d 'Accept documented tolerances (e.g. a header without delegationDepth), reporting each as a warning. Off by default: without it dsh accepts and refuses exactly the logs the reference does'
complete -c dsh -n "__fish_dsh_using_subcommand completions" -s q -l quiet -d 'Do not print warnings on stderr'
complete -c dsh -n "__fish_dsh_using_subcommand completions" -s h -l help -d 'Print help'
complete -c dsh -n "__fish_dsh_using_subcommand completions" -s V -l version -d 'Print version'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events load completions help" -f -a "surface" -d 'Show the current surface: the ordered nodes the model sees'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events load completions help" -f -a "messages" -d 'Show the derived model-visible messages (deriveMessages)'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events load completions help" -f -a "header" -d 'Show the folded request header and the latest route / context window'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events load completions help" -f -a "measure" -d 'Measure context pressure (the harness\'s own figure), the routed compaction policy, and optional exact tokenizer counts'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events load completions help" -f -a "events" -d 'Show the human transcript of the raw log (append-origin events)'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events load completions help" -f -a "load" -d 'Show what reading produced: header, event counts, closers, tolerances'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events load completions help" -f -a "completions" -d 'Print shell completions'
complete -c dsh -n "__fish_dsh_using_subcommand help; and not __fish_seen_subcommand_from surface messages header measure events load completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
