/* output/step_list.c: the listed steps, packed or not (see step_list.h). The appending side runs
 * under the agent's step lock on the thread that marks a step: no malloc, no locks, no stdio. */
#include "output/step_list.h"

enum { FLAG_PARTIAL = 1, FLAG_ATTRIBUTED = 2 };

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static const uint8_t *get_varint(const uint8_t *p, uint64_t *v)
{
    uint64_t out = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = *p++;
        out |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80) || shift >= 63)
            break;
    }
    *v = out;
    return p;
}

void step_list_append(struct step_list *l, const struct rep_step *st)
{
    uint8_t *p = l->bytes + l->len;
    p = put_varint(p, st->step - l->next_step);
    p = put_varint(p, st->wall_ns);
    p = put_varint(p, st->syncs);
    p = put_varint(p, st->blocked_ns);
    p = put_varint(p, st->launches);
    *p++ = (uint8_t)((st->partial ? FLAG_PARTIAL : 0) | (st->attributed ? FLAG_ATTRIBUTED : 0));
    l->len = (size_t)(p - l->bytes);
    l->n++;
    l->next_step = st->step + 1;
}

size_t rep_steps_listed(const struct rep_process *p)
{
    bool held = p->steps || (p->step_list && p->step_list->bytes);
    return held ? p->nsteps : 0;
}

void rep_steps_begin(struct rep_step_cursor *c, const struct rep_process *p)
{
    *c = (struct rep_step_cursor){.p = p};
}

bool rep_steps_next(struct rep_step_cursor *c, struct rep_step *out)
{
    const struct rep_process *p = c->p;
    if (c->i >= rep_steps_listed(p))
        return false;
    if (p->steps) {
        *out = p->steps[c->i++];
        return true;
    }
    const struct step_list *l = p->step_list;
    if (c->i >= l->n || c->off >= l->len)
        return false;
    const uint8_t *q = l->bytes + c->off;
    uint64_t gap;
    q = get_varint(q, &gap);
    *out = (struct rep_step){.step = c->next_step + gap};
    q = get_varint(q, &out->wall_ns);
    q = get_varint(q, &out->syncs);
    q = get_varint(q, &out->blocked_ns);
    q = get_varint(q, &out->launches);
    out->partial = *q & FLAG_PARTIAL;
    out->attributed = *q++ & FLAG_ATTRIBUTED;
    c->off = (size_t)(q - l->bytes);
    c->next_step = out->step + 1;
    c->i++;
    return true;
}

bool rep_step_at(const struct rep_process *p, size_t i, struct rep_step *out)
{
    if (i >= rep_steps_listed(p))
        return false;
    if (p->steps) {
        *out = p->steps[i];
        return true;
    }
    struct rep_step_cursor c;
    rep_steps_begin(&c, p);
    bool ok;
    do
        ok = rep_steps_next(&c, out);
    while (ok && c.i <= i);
    return ok;
}
