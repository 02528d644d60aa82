#!/usr/bin/env bash
# Docs that run: every command in README.md's code blocks is run, and every output the README
# shows as real is compared with what the command prints. The command list is read from the
# README at test time, so an edited or merged README is checked as it stands.
#
# Usage: check_readme.sh ZEROSIM_BINARY REPO_ROOT [README]
#
# What the README's code blocks mean to this test (the markers are HTML comments, invisible when
# the README is rendered; each applies to the code block right after it):
#   ```sh block              every line is a command (a trailing \ continues it; # starts a comment)
#                            and must exit 0. Commands of one block run in order in one folder.
#   <!-- docs-test: real --> the next block is a transcript: each line starting with "$ " is a
#                            command, the lines after it (up to the next "$ ") what it prints on
#                            stdout and stderr together. Exit codes are not compared (the error
#                            examples exit 1), the text is.
#   <!-- docs-test: output CMD -->
#                            the next block is what CMD prints on stdout.
#   <!-- docs-test: skip REASON -->
#                            the next block is not run (REASON says why, e.g. it installs packages).
# In compared text a line "..." stands for any number of lines (a block may show the first lines).
# A block that is not ```sh and has no marker is an error: every block is either run, compared or
# skipped with a reason.
#
# Besides, every relative link of the README must name a shipped file, and every buffer id that
# `plan --verbose` prints must have its row in docs/deepspeed_behaviour.md.
#
# Each block runs in a fresh folder holding the fixture files of tests/docs/fixtures/ (the files
# the examples name: p.json, ds.json, ...), links to the repository's scenarios/, models/ and
# tests/, and build/cli/zerosim; `zerosim` alone is on PATH too.
set -uo pipefail
zs=$(realpath "$1")
root=$(realpath "$2")
readme=${3:-"$root/README.md"}
fixtures="$root/tests/docs/fixtures"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
ln -s "$zs" "$work/bin/zerosim"
export PATH="$work/bin:$PATH"

failures=0
blocks=0
commands=0
fail() {
  echo "README.md:$1: $2" >&2
  failures=$((failures + 1))
}

# A fresh folder for one block.
new_dir() {
  local d
  d=$(mktemp -d "$work/block.XXXX")
  cp -R "$fixtures/." "$d/"
  for sub in scenarios models tests; do ln -s "$root/$sub" "$d/$sub"; done
  mkdir -p "$d/build/cli"
  ln -s "$zs" "$d/build/cli/zerosim"
  echo "$d"
}

# match EXPECTED_FILE ACTUAL_FILE: 0 when ACTUAL has EXPECTED's lines, "..." matching any run.
match() {
  local -a e a
  mapfile -t e <"$1"
  mapfile -t a <"$2"
  local ne=${#e[@]} na=${#a[@]} i=0 pos=0 anchored=1
  while ((i < ne)); do
    if [[ "${e[i]}" == "..." ]]; then
      anchored=0
      i=$((i + 1))
      continue
    fi
    # The segment: expected lines up to the next "...".
    local j=$i
    while ((j < ne)) && [[ "${e[j]}" != "..." ]]; do j=$((j + 1)); done
    local len=$((j - i)) found=-1 start
    for ((start = pos; start + len <= na; start++)); do
      local k ok=1
      for ((k = 0; k < len; k++)); do
        if [[ "${e[i + k]}" != "${a[start + k]}" ]]; then
          ok=0
          break
        fi
      done
      if ((ok)); then
        found=$start
        break
      fi
      ((anchored)) && break
    done
    ((found < 0)) && return 1
    pos=$((found + len))
    i=$j
    anchored=1
  done
  # Without a trailing "...", the output must end where the block does.
  if ((ne == 0)) || [[ "${e[ne - 1]}" != "..." ]]; then
    ((pos == na)) || return 1
  fi
  return 0
}

compare() {  # LINE EXPECTED ACTUAL WHAT
  if ! match "$2" "$3"; then
    fail "$1" "$4 does not print what the README shows; diff (README vs actual):"
    diff "$2" "$3" | head -40 >&2
  fi
}

# run_sh LINE DIR: runs each logical command of the block in $block_text.
run_sh() {
  local line=$1 dir=$2 cmd="" l
  while IFS= read -r l; do
    if [[ "$l" == *\\ ]]; then
      cmd+="${l%\\} "
      continue
    fi
    cmd+="$l"
    local trimmed="${cmd#"${cmd%%[![:space:]]*}"}"
    if [[ -n "$trimmed" && "$trimmed" != \#* ]]; then
      commands=$((commands + 1))
      if ! (cd "$dir" && bash -c "$cmd") >"$dir/.out" 2>&1; then
        fail "$line" "command failed: $trimmed"
        tail -5 "$dir/.out" >&2
      fi
    fi
    cmd=""
  done <<<"$block_text"
}

# run_transcript LINE DIR
run_transcript() {
  local line=$1 dir=$2 cmd="" l
  : >"$dir/.expected"
  local -a cmds=() expect_files=()
  local n=-1
  while IFS= read -r l; do
    if [[ "$l" == '$ '* ]]; then
      n=$((n + 1))
      cmds[n]="${l#\$ }"
      expect_files[n]="$dir/.expected.$n"
      : >"${expect_files[n]}"
    elif ((n >= 0)); then
      printf '%s\n' "$l" >>"${expect_files[n]}"
    fi
  done <<<"$block_text"
  local i
  for ((i = 0; i <= n; i++)); do
    commands=$((commands + 1))
    (cd "$dir" && bash -c "${cmds[i]}") >"$dir/.actual.$i" 2>&1
    compare "$line" "${expect_files[i]}" "$dir/.actual.$i" "\$ ${cmds[i]}"
  done
}

marker=""
marker_line=0
in_block=0
lang=""
block_text=""
block_line=0
lineno=0
while IFS= read -r raw || [[ -n "$raw" ]]; do
  lineno=$((lineno + 1))
  if ((in_block)); then
    if [[ "$raw" == '```' ]]; then
      in_block=0
      blocks=$((blocks + 1))
      dir=$(new_dir)
      case "$marker" in
        skip*) ;;
        real)
          run_transcript "$block_line" "$dir"
          ;;
        output\ *)
          commands=$((commands + 1))
          cmd="${marker#output }"
          printf '%s\n' "$block_text" >"$dir/.expected"
          (cd "$dir" && bash -c "$cmd") >"$dir/.actual" 2>/dev/null
          compare "$block_line" "$dir/.expected" "$dir/.actual" "$cmd"
          ;;
        "")
          if [[ "$lang" == "sh" ]]; then
            run_sh "$block_line" "$dir"
          elif grep -q '^\$ ' <<<"$block_text"; then
            fail "$block_line" "a transcript (\"\$ \" lines) without <!-- docs-test: real --> or <!-- docs-test: skip REASON -->"
          else
            # Every block is checked or says why not: an unmarked block was silently never run
            # (the recorder's Python lines and the viewer's synopsis were such blocks).
            fail "$block_line" "a code block that is neither run (\`\`\`sh) nor marked (<!-- docs-test: real -->, <!-- docs-test: output CMD --> or <!-- docs-test: skip REASON -->)"
          fi
          ;;
        *) fail "$marker_line" "unknown docs-test marker \"$marker\"" ;;
      esac
      marker=""
      continue
    fi
    if [[ -z "$block_text" && $block_started -eq 0 ]]; then
      block_text="$raw"
      block_started=1
    else
      block_text+=$'\n'"$raw"
    fi
    continue
  fi
  if [[ "$raw" =~ ^\<!--\ docs-test:\ (.*)\ --\>$ ]]; then
    marker="${BASH_REMATCH[1]}"
    marker_line=$lineno
    if [[ "$marker" == skip && "$marker" != skip\ * ]]; then
      fail "$lineno" "docs-test: skip needs a reason"
    fi
    continue
  fi
  if [[ "$raw" =~ ^\`\`\`([a-z]*)$ ]]; then
    in_block=1
    lang="${BASH_REMATCH[1]}"
    block_text=""
    block_started=0
    block_line=$lineno
    continue
  fi
  # A marker applies to the very next code block; text in between means it was misplaced.
  if [[ -n "$marker" && -n "$raw" ]]; then
    fail "$marker_line" "docs-test marker not followed by a code block"
    marker=""
  fi
done <"$readme"

((in_block)) && fail "$block_line" "code block never closed"

# Every relative link of the README names a file the repository ships (it pointed at a spec file
# outside the repository).
lineno=0
while IFS= read -r raw; do
  lineno=$((lineno + 1))
  rest="$raw"
  while [[ "$rest" =~ \]\(([^\)#]+)(#[^\)]*)?\) ]]; do
    target="${BASH_REMATCH[1]}"
    rest="${rest#*"${BASH_REMATCH[0]}"}"
    [[ "$target" == *://* ]] && continue
    [[ -e "$(dirname "$readme")/$target" ]] || fail "$lineno" "link to $target, which the repository does not ship"
  done
done <"$readme"

# Every buffer id `plan --verbose` prints (B1, T2, ...) has its row in the behaviour document the
# README links (docs/deepspeed_behaviour.md).
behaviour="$root/docs/deepspeed_behaviour.md"
ids=$(for extra in "" "--grad-accum 4" "--precision fp16 --grad-accum 2" "--mode paper"; do
  # shellcheck disable=SC2086
  "$zs" plan --verbose --model gpt2-xl $extra 2>/dev/null | grep -oE '\((B|T)[0-9]+' | tr -d '('
done | sort -u)
[[ -n "$ids" ]] || fail 1 "plan --verbose printed no buffer ids"
for id in $ids; do
  grep -q "^| $id |" "$behaviour" || fail 1 "plan --verbose prints $id, which docs/deepspeed_behaviour.md does not explain"
done
if ((commands == 0)); then
  fail 1 "no command found: is this the README?"
fi
echo "check_readme: $blocks code blocks, $commands commands run, $failures failure(s)"
((failures == 0))
