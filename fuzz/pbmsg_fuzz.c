/* pbmsg_fuzz.c -- libFuzzer over the protobuf decode path of requests and
 * responses: the first byte picks a message, protobuf-c unpacks the rest
 * (required fields enforced); every PlainBuffer field of what unpacks goes
 * through the PlainBuffer decoder; a message that unpacks packs again to a
 * message that unpacks, unless it kept unknown fields (protobuf-c keeps
 * even a field number 0 and writes it back as is; otskit.wire refuses
 * unknown fields anyway). No crash, no leak. */
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "plainbuffer.h"
#include "tablestore.pb-c.h"
#include "tablestore_filter.pb-c.h"

static const ProtobufCMessageDescriptor *const msgs[] = {
  &ots__put_row_request__descriptor, &ots__update_row_request__descriptor,
  &ots__delete_row_request__descriptor, &ots__get_row_request__descriptor,
  &ots__get_range_request__descriptor, &ots__batch_get_row_request__descriptor,
  &ots__batch_write_row_request__descriptor, &ots__create_table_request__descriptor,
  &ots__get_row_response__descriptor, &ots__get_range_response__descriptor,
  &ots__batch_get_row_response__descriptor, &ots__batch_write_row_response__descriptor,
  &ots__describe_table_response__descriptor, &ots__error__descriptor,
  &ots__filter__filter__descriptor, &ots__filter__composite_column_value_filter__descriptor,
};
#define NMSGS (sizeof msgs / sizeof msgs[0])

static void rows(const ProtobufCBinaryData *b) {
  pb_reader r;
  pb_row row;
  memset(&row, 0, sizeof row);
  if (pb_reader_init(&r, b->data, b->len))
    while (pb_read_row(&r, &row) == 1) {}
  pb_row_free(&row);
}

/* every bytes field, recursively: PlainBuffer rows or not, decoding must
 * hold; returns how many unknown fields the messages kept */
static size_t walk(const ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  unsigned i;
  size_t unknown = m->n_unknown_fields;
  for (i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    const char *member = (const char *)m + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)((const char *)m + f->quantifier_offset), j;
      for (j = 0; j < n; j++) {
        if (f->type == PROTOBUF_C_TYPE_BYTES) rows(&(*(ProtobufCBinaryData *const *)member)[j]);
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) unknown += walk((*(ProtobufCMessage **const *)member)[j]);
      }
    } else if (f->type == PROTOBUF_C_TYPE_BYTES) {
      rows((const ProtobufCBinaryData *)member);
    } else if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(ProtobufCMessage *const *)member) {
      unknown += walk(*(ProtobufCMessage *const *)member);
    }
  }
  return unknown;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const ProtobufCMessageDescriptor *d;
  ProtobufCMessage *m, *again;
  uint8_t *buf;
  size_t n, unknown;
  if (size < 1) return 0;
  d = msgs[data[0] % NMSGS];
  m = protobuf_c_message_unpack(d, NULL, size - 1, data + 1);
  if (!m) return 0;
  unknown = walk(m);
  n = protobuf_c_message_get_packed_size(m);
  buf = malloc(n ? n : 1);
  if (!buf) abort();
  if (protobuf_c_message_pack(m, buf) != n) abort();
  again = protobuf_c_message_unpack(d, NULL, n, buf);
  if (!again && !unknown) abort();
  if (again) protobuf_c_message_free_unpacked(again, NULL);
  protobuf_c_message_free_unpacked(m, NULL);
  free(buf);
  return 0;
}
