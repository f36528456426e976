/* main.c: dispatches `common_unit SUBCOMMAND args...` to the functions listed in unit.h. */
#include <stdio.h>
#include <string.h>

#include "unit.h"

typedef struct {
    const char *name, *usage;
    int (*fn)(int argc, char **argv);
} unit_command;

#define UNIT_ENTRY(fn, name, usage) { name, usage, unit_##fn },
static const unit_command COMMANDS[] = { UNIT_COMMANDS(UNIT_ENTRY) };
#undef UNIT_ENTRY

static void usage(FILE *out)
{
    fprintf(out, "usage: common_unit SUBCOMMAND [args...]\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++)
        fprintf(out, "  %-18s %s\n", COMMANDS[i].name, COMMANDS[i].usage);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++)
        if (strcmp(argv[1], COMMANDS[i].name) == 0) {
            if (COMMANDS[i].usage[0] == ':' && argc > 2) { /* usage ": ..." takes no arguments */
                fprintf(stderr, "common_unit %s: takes no arguments\n", argv[1]);
                return 2;
            }
            return COMMANDS[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "common_unit: unknown subcommand %s\n", argv[1]);
    usage(stderr);
    return 2;
}
