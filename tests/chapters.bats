#!/usr/bin/env bats
# CPU-only: every chapter README runs the course's loop in the same order (README.md, top):
# "## The idea", "## Guess first", "## Run", "## Look", "## Why", "## Things to try", and no
# other level-2 section (a chapter's own subsections are ###). Guess first asks; it holds no
# table that would give the answers away. The top README's course table has a row per stage.
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

@test "chapters: the top README's course table has one row per stage" {
    for stage in $(stages); do
        echo "checking the row of $stage"
        grep -q "^| $stage | [0-9]" "$ROOT/README.md"
    done
}
