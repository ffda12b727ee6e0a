/* The floor for `worker plan`: libyaml's bare event scan of a manifest, counting the events and
 * the scalars, with nothing kept. Built and run by bench.py (cc -O2 yaml_scan.c -lyaml). */
#include <stdio.h>
#include <yaml.h>

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: yaml_scan FILE\n"); return 2; }
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 2; }
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, file);
    unsigned long events = 0, scalars = 0;
    for (;;) {
        yaml_event_t event;
        if (!yaml_parser_parse(&parser, &event)) { fprintf(stderr, "%s: %s\n", argv[1], parser.problem); return 1; }
        events++;
        if (event.type == YAML_SCALAR_EVENT) scalars++;
        int done = event.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&event);
        if (done) break;
    }
    printf("%lu events, %lu scalars\n", events, scalars);
    yaml_parser_delete(&parser);
    fclose(file);
    return 0;
}
