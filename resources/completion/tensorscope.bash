# bash completion for tensorscope: commands, their options, spec presets (asked from the program,
# so new presets complete at once), task names, and file or directory arguments.
_tensorscope() {
  local cur prev words cword
  _init_completion 2>/dev/null || {
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  }
  # The command is the first word that is not a global option (--threads T may come first).
  local i command="" sub=""
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      --threads) ((i++)) ;;
      -*) ;;
      *) if [[ -z $command ]]; then command=${words[i]}; elif [[ -z $sub ]]; then sub=${words[i]}; fi ;;
    esac
  done
  case $prev in
    --threads|--steps|--seed|--batch|--seq|--dpi|--count|--jobs|--x) return ;;
    --preset) COMPREPLY=($(compgen -W "$(tensorscope spec preset --list 2>/dev/null)" -- "$cur")); return ;;
    --format)
      if [[ $command == sweep ]]; then COMPREPLY=($(compgen -W "md csv latex json" -- "$cur"))
      else COMPREPLY=($(compgen -W "svg pdf png dot tikz pytorch" -- "$cur")); fi
      return ;;
    --theme) COMPREPLY=($(compgen -W "light dark" -- "$cur")); return ;;
    --device) COMPREPLY=($(compgen -W "cpu cuda" -- "$cur")); return ;;
    --init-cores) COMPREPLY=($(compgen -W "config checkpoint" -- "$cur")); return ;;
    --task) COMPREPLY=($(compgen -W "arithmetic char_lm fashion_mnist copy reverse sort" -- "$cur")); return ;;
    --size) COMPREPLY=($(compgen -W "1280x800 1600x1000 1920x1080" -- "$cur")); return ;;
    --out|--resume|--run|--init-from) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --config|--spec|--weights|--input|--output|--save-weights|--demo|--screenshot|--figure)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  local options
  case $command in
    "")
      if [[ $cur == -* ]]; then
        options="--threads --screenshot --demo --size --version --help"
      else  # a command, or a session file / run directory to open in the window
        COMPREPLY=($(compgen -W "spec attention diagram train eval infer export sweep task" -- "$cur") $(compgen -f -- "$cur"))
        return
      fi ;;
    spec)
      case $sub in
        "") COMPREPLY=($(compgen -W "preset validate cost" -- "$cur")); return ;;
        preset) COMPREPLY=($(compgen -W "--list $(tensorscope spec preset --list 2>/dev/null)" -- "$cur")); return ;;
        validate) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        cost) options="--batch --seq --json" ;;
      esac ;;
    attention) options="--spec --seed --save-weights --weights --input --output --maps" ;;
    diagram) options="--spec --preset --format --out --dpi --seq --theme --sizes --no-title --check --batch --seed" ;;
    train) options="--config --out --steps --threads --device --init-from --init-cores --resume" ;;
    eval) options="--run" ;;
    infer) options="--run --input --output" ;;
    export) options="--run --format --out" ;;
    sweep)
      case $sub in
        "") COMPREPLY=($(compgen -W "plan run run-trial status report" -- "$cur")); return ;;
        plan) [[ $cur == -* ]] || { COMPREPLY=($(compgen -f -- "$cur")); return; }; options="--out" ;;
        run) [[ $cur == -* ]] || { COMPREPLY=($(compgen -d -- "$cur")); return; }; options="--jobs --retry-failed --json --until-settled --alpha --max-seeds" ;;
        status) [[ $cur == -* ]] || { COMPREPLY=($(compgen -d -- "$cur")); return; }; options="--json" ;;
        report) [[ $cur == -* ]] || { COMPREPLY=($(compgen -d -- "$cur")); return; }; options="--format --out --figure --x" ;;
        run-trial) COMPREPLY=($(compgen -d -- "$cur")); return ;;
      esac ;;
    task)
      [[ -z $sub ]] && { COMPREPLY=($(compgen -W "sample" -- "$cur")); return; }
      options="--task --seed --count" ;;
  esac
  COMPREPLY=($(compgen -W "$options --help" -- "$cur"))
}
complete -F _tensorscope tensorscope
