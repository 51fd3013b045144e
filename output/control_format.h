/* output/control_format.h: the two small files through which `syncspy start/stop` controls a
 * running process (agent/background/control.h): the request the CLI puts into the process folder (written
 * to a temporary name, then renamed to CONTROL_FILE_NAME) and the acknowledgment the agent puts
 * beside it (CONTROL_ACK_FILE_NAME, the same way). Both are short lines of key=value text under a
 * magic first line; these are pure functions over buffers (no allocation, no I/O), shared by the
 * agent and the CLI so that one parser decides what a request is. */
#ifndef SYNCSPY_CONTROL_FORMAT_H
#define SYNCSPY_CONTROL_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONTROL_FILE_NAME "control"
#define CONTROL_ACK_FILE_NAME "control.ack"
#define CONTROL_ACK_TMP_NAME "control.ack.tmp"
#define CONTROL_BYTES_MAX 512 /* a request longer than this is refused unread */
#define CONTROL_ACK_BYTES_MAX 1024
#define CONTROL_ID_MAX 64 /* [A-Za-z0-9._:-], at most this many */
#define CONTROL_STEPS_MAX 1000000000ull
#define CONTROL_UNTIL_STOP UINT64_MAX /* a start's last step when it has no count */

enum control_command { CONTROL_START = 1, CONTROL_STOP = 2 };

/* A request:
 *     syncspy-control 1
 *     id=host-4242-1700000000123
 *     command=start
 *     steps=100
 * id is optional (the acknowledgment repeats it); steps only with start, 1 to CONTROL_STEPS_MAX
 * (absent: until a stop). Each key at most once, no other key, every line ends with a newline
 * (the last may not). */
struct control_request {
    uint8_t command; /* enum control_command */
    uint64_t steps;  /* 0: until a stop */
    char id[CONTROL_ID_MAX + 1];
};

/* Parses n bytes of text. 0, or -1 with one sentence in err (what is wrong). */
int control_request_parse(const char *text, size_t n, struct control_request *out, char *err,
                          size_t errlen);
/* The request's text into buf; its length, or -1 when it does not fit. */
int control_request_format(const struct control_request *r, char *buf, size_t cap);

/* The acknowledgment: the agent's answer to the latest request (any requester's: match the id).
 *   result=pending   taken during step `step`; it applies when that step ends
 *   result=applied   applied when step `step` ended: a start records first..last (last
 *                    "until-stop": no count); a stop ended the recording of first..last (0 0:
 *                    none was going on)
 *   result=refused   not a request (reason says why); nothing changed */
enum control_result { CONTROL_PENDING = 1, CONTROL_APPLIED = 2, CONTROL_REFUSED = 3 };
struct control_ack {
    char id[CONTROL_ID_MAX + 1];
    uint8_t result;  /* enum control_result */
    uint8_t command; /* enum control_command; 0 for a refused file */
    uint8_t cause;   /* enum rep_cause (output/model.h) of the request */
    int pid;
    uint64_t step, first, last;
    char schedule[160]; /* SYNCSPY_SCHEDULE as the agent describes it */
    char reason[240];   /* refused: why */
};
int control_ack_format(const struct control_ack *a, char *buf, size_t cap);
int control_ack_parse(const char *text, size_t n, struct control_ack *out, char *err,
                      size_t errlen);

#endif
