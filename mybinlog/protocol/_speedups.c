/* mybinlog.protocol._speedups: the optional compiled core of the sans-IO decoder (docs/compiled-core.md).
 *
 * One extension module built from several files (setup.py), each one role; _speedups.h declares what they share.
 * What Python sees, and the pure-Python twin each one must match:
 *
 *   _sp_rows.c    RowProgram(ncols, missing, before, after=None): a table's row image layout compiled once
 *                 (mybinlog/protocol/_table.py builds it from a TableMap); .decode(buf, pos, end) decodes the row
 *                 images of a rows event into the rows of the generated Python decoder (_table._compile_python)
 *   _sp_render.c  RowProgram.render_json(buf, pos, end): those rows written as JSON text, as the JSON Lines renderer
 *                 writes them from the values (_format._json_rows, _json_update_rows)
 *   _sp_decimal.c DECIMAL values for both, a Decimal built in place where the layout checks out (DIRECT_DECIMAL)
 *   _sp_utf8.c    the strict UTF-8 decoder of text values (bytes.decode("utf-8")), AVX-512 where the CPU has it;
 *                 utf8(data) and utf8_simd(on) for the tests
 *   _sp_events.c  crc32 (zlib.crc32), frame_events (_packets.PacketFramer.next_batch), cut_events (the loop of
 *                 source/_files.read_binlog_file), decode_events and set_event_classes (the decoder loop:
 *                 _decoder.EventDecoder._decode_batch_python)
 *   _sp_stream.c  Ready and StreamIter (BinlogStream.__anext__ and _anext, source/_stream.py), active_indexes
 *                 (the scan of BinlogStream._track)
 *   _sp_tsv.c     TsvRows(ops, python_row): rows into ClickHouse's TabSeparated (the generated Python encoder of
 *                 clickhouse/types/_encoders.make_rows_encoder)
 *   _jsonb.c      decode_jsonb(data, fallback=None) and the JSON columns of RowProgram (_jsonb.decode_jsonb)
 *   _speedups.c   this file: the module, its functions, DIRECT_DECIMAL
 *
 * The contract with the pure-Python code is "same result or no result": whenever a value is unusual (a zero or
 * invalid date, a digit group out of range, bytes that are not valid text, an image running past its event) this
 * code either hands that one value to the pure-Python value function (passed in as the column's fallback) or gives
 * up on the whole event by returning None, and the caller then decodes the event in pure Python, which produces the
 * exact value or the exact error. Errors are therefore always raised by the pure-Python code, never here.
 *
 * No IO, no global state but a few immutable references taken at import (decimal.Decimal, datetime's C API) and
 * what the CPU can do (PCLMULQDQ, AVX-512).
 */
#include "_speedups.h"

#include <datetime.h>

PyObject *mb_Decimal = NULL; /* decimal.Decimal */
PyObject *mb_UTC = NULL;     /* datetime.timezone.utc */

int
mb_add_type(PyObject *module, const char *name, PyTypeObject *type)
{
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

static PyMethodDef module_methods[] = {
    {"active_indexes", (PyCFunction)(void (*)(void))mb_active_indexes, METH_FASTCALL,
     "active_indexes(events, passive) -> indexes of the events whose type_code is not in passive"},
    {"crc32", (PyCFunction)mb_py_crc32, METH_O, "crc32(data) -> the CRC32 of data (zlib's)"},
    {"utf8", (PyCFunction)mb_py_utf8, METH_O, "utf8(data) -> data decoded as strict UTF-8, like bytes.decode()"},
    {"utf8_simd", (PyCFunction)mb_py_utf8_simd, METH_O,
     "utf8_simd(on) -> whether UTF-8 text is now decoded with AVX-512 (only where the CPU has it; for the tests)"},
    {"set_event_classes", (PyCFunction)mb_set_event_classes, METH_O,
     "set_event_classes(((cls, slot names), ...)): the event classes decode_events builds"},
    {"cut_events", (PyCFunction)(void (*)(void))mb_cut_events, METH_FASTCALL,
     "cut_events(data, pos, limit) -> (raws, offsets, pos): a binlog file's events, each sliced once"},
    {"frame_events", (PyCFunction)(void (*)(void))mb_frame_events, METH_FASTCALL,
     "frame_events(buf, pos, end, max_bytes, seq) -> (events, pos, seq, stop payload) or None"},
    {"decode_events", (PyCFunction)(void (*)(void))mb_decode_events, METH_FASTCALL,
     "decode_events(raws, offsets, start, out, file, trailer, verify, network, tid6, hits, table_maps) -> index"},
    {"decode_jsonb", (PyCFunction)(void (*)(void))mb_jsonb_py_decode, METH_FASTCALL,
     "decode_jsonb(data, fallback=None) -> a MySQL binary JSON document decoded as _jsonb.decode_jsonb does; when it "
     "is malformed, fallback(bytes(data)) (which raises the exact error), or ValueError without one"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, .m_name = "mybinlog.protocol._speedups",
    .m_doc = "The optional compiled core of mybinlog's decoder (see mybinlog/protocol/_accel.py).", .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    mb_events_init();
    mb_utf8_init();
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL)
        return NULL;
    PyObject *decimal = PyImport_ImportModule("decimal");
    if (decimal == NULL)
        return NULL;
    mb_Decimal = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (mb_Decimal == NULL || mb_dec_direct_init() < 0)
        return NULL;
    mb_UTC = PyDateTimeAPI->TimeZone_UTC;
    Py_INCREF(mb_UTC);
    PyObject *m = PyModule_Create(&speedups_module);
    if (m == NULL)
        return NULL;
    /* RowProgram; Ready and StreamIter; TsvRows. DIRECT_DECIMAL: whether DECIMAL values are built directly
       (mb_dec_direct_init), for the tests and the benchmarks */
    if (mb_rows_init(m) < 0 || mb_stream_init(m) < 0 || mb_tsv_init(m) < 0 ||
        PyModule_AddIntConstant(m, "DIRECT_DECIMAL", mb_dec_direct) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
