#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# CPU-only: every chapter README runs the course's loop in the same order (README.md, top):
# "## The idea", "## Guess first", "## Run", "## Look", "## Why", "## Things to try", and no
# other level-2 section (a chapter's own subsections are ###). Guess first asks; it holds no
# table that would give the answers away, and it links to no page that holds our answers (our
# measured runs and results: docs/results.md, docs/perf-notes.md, docs/h200/, the top README).
# Each Look step links the stage's docs/h200 output and trace (the look step without a GPU).
# Each chapter ends with a link to the next one; the last, to docs/results.md, whose course table
# has a row per stage.
load helpers

# sections FILE: the level-2 headings of a Markdown file, outside fenced code, joined by '|'.
sections() {
    awk '/^```/ { fence = !fence } !fence && /^## / { sub(/^## /, ""); print }' "$1" | paste -sd '|' -
}

# guess_table_lines FILE: how many table rows (lines starting with '|') "## Guess first" holds.
guess_table_lines() {
    awk '/^```/ { fence = !fence }
         !fence && /^## / { inside = ($0 == "## Guess first") ; next }
         inside && /^\|/ { n++ }
         END { print n + 0 }' "$1"
}

stages() {
    (cd "$ROOT" && ls -d [0-9][0-9]_*/ | tr -d /)
}

@test "chapters: every stage has a chapter README" {
    for stage in $(stages); do
        echo "checking $stage/README.md"
        [ -f "$ROOT/$stage/README.md" ]
    done
}

@test "chapters: six parts in order: The idea, Guess first, Run, Look, Why, Things to try" {
    want="The idea|Guess first|Run|Look|Why|Things to try"
    for stage in $(stages); do
        got=$(sections "$ROOT/$stage/README.md")
        echo "$stage: got '$got', want '$want'"
        [ "$got" = "$want" ]
    done
}

@test "chapters: Guess first asks questions, with no table of answers" {
    for stage in $(stages); do
        n=$(guess_table_lines "$ROOT/$stage/README.md")
        echo "$stage: $n table lines under Guess first"
        [ "$n" -eq 0 ]
    done
}

# guess_links FILE: the link targets (Markdown "](target)") under "## Guess first", one a line.
guess_links() {
    awk '/^```/ { fence = !fence }
         !fence && /^## / { inside = ($0 == "## Guess first") ; next }
         inside' "$1" | grep -o '](\([^)]*\))' | sed 's/^](//; s/)$//'
}

@test "chapters: Guess first links to no page that holds our answers" {
    for stage in $(stages); do
        links=$(guess_links "$ROOT/$stage/README.md")
        echo "$stage: links: ${links:-none}"
        bad=$(printf '%s\n' "$links" | grep -E '(^|/)(docs/results\.md|docs/perf-notes\.md|docs/h200/|README\.md$)' | grep -v 'pytorch-h200' || true)
        echo "$stage: links to answers: ${bad:-none}"
        [ -z "$bad" ]
        words=$(awk '/^## / { inside = ($0 == "## Guess first"); next } inside' "$ROOT/$stage/README.md" | grep -ciE "top README|results\.md|perf-notes|peers table|make compare" || true)
        echo "$stage: Guess first lines naming an answer page: $words"
        [ "$words" -eq 0 ]
    done
}

@test "chapters: each chapter ends with a link to the next, the last with one to docs/results.md" {
    list=($(stages))
    for i in "${!list[@]}"; do
        stage=${list[$i]}
        if [ $((i + 1)) -lt ${#list[@]} ]; then want="../${list[$((i + 1))]}/README.md"; else want="../docs/results.md"; fi
        last=$(grep -v '^[[:space:]]*$' "$ROOT/$stage/README.md" | tail -n 1)
        echo "$stage: last line '$last', want a link to $want"
        [[ "$last" == *"]($want)"* ]]
    done
}

@test "chapters: 06 names chapter 07" {
    grep -q '](../07_hopper/README.md)' "$ROOT/06_cudnn/README.md"
}

@test "chapters: docs/results.md's course table has one row per stage" {
    for stage in $(stages); do
        echo "checking the row of $stage"
        [ "$(grep -c "^| $stage | [0-9]" "$ROOT/docs/results.md")" -eq 1 ]
    done
}

@test "chapters: the top README holds no results table (they come after the course)" {
    [ "$(grep -c '^| 0[0-9]_[a-z]* | [0-9]' "$ROOT/README.md")" -eq 0 ]
    [ "$(grep -c 'results:' "$ROOT/README.md")" -eq 0 ]
    grep -q '](docs/results.md)' "$ROOT/README.md"
}

# look_section FILE: the text of "## Look", outside fenced code.
look_section() {
    awk '/^```/ { fence = !fence }
         !fence && /^## / { inside = ($0 == "## Look"); next }
         inside' "$1"
}

@test "chapters: every Look step can be done without a GPU: it links the stage's docs/h200 output and trace, and both exist" {
    for stage in $(stages); do
        look=$(look_section "$ROOT/$stage/README.md")
        echo "checking $stage"
        grep -qF "(../docs/h200/$stage.txt)" <<< "$look"
        grep -qF "(../docs/h200/$stage.json)" <<< "$look"
        grep -qE '\(\.\./docs/pytorch-h200/[a-z_]+\.json\)' <<< "$look"
        [ -s "$ROOT/docs/h200/$stage.txt" ]
        [ -s "$ROOT/docs/h200/$stage.json" ]
        peer=$(grep -oE '\(\.\./docs/pytorch-h200/[a-z_]+\.json\)' <<< "$look" | head -n 1 | tr -d '()')
        [ -s "$ROOT/$stage/$peer" ]
    done
}

# Every link from a Markdown file to a heading of docs/perf-notes.md names a heading that exists
# (GitHub's anchor: the heading in lower case, punctuation but '-' and '_' dropped, spaces as '-').
@test "chapters: every link into docs/perf-notes.md names one of its headings" {
    run py_stdlib - "$ROOT" <<'PY'
import os, re, sys
root = sys.argv[1]
def slug(h):
    return re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
with open(os.path.join(root, "docs", "perf-notes.md"), encoding="utf-8") as f:
    heads = {slug(l.lstrip("#")) for l in f if l.startswith("#")}
n = bad = 0
for d, _, files in os.walk(root):
    if "/." in d or "/build" in d:
        continue
    for name in files:
        if not name.endswith(".md"):
            continue
        p = os.path.join(d, name)
        with open(p, encoding="utf-8") as f:
            for a in re.findall(r"perf-notes\.md#([^)\s]+)\)", f.read()):
                n += 1
                if a not in heads:
                    bad += 1
                    print(f"{os.path.relpath(p, root)}: #{a} is no heading of docs/perf-notes.md")
print(f"links={n} bad={bad}")
PY
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" =~ links=([0-9]+)\ bad=0$ ]]
    [ "${BASH_REMATCH[1]}" -ge 4 ]
}
