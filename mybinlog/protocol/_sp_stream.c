/* BinlogStream's side (mybinlog/source/_stream.py): the Ready and StreamIter awaitables, which make an
 * `async for` step over decoded events cost no coroutine and no Python frame, and active_indexes, the scan of
 * BinlogStream._track. */
#include "_speedups.h"

/* Ready(value): an awaitable that is already done, returned by BinlogStream.__anext__ for an event that is already
 * decoded, so that `async for` costs no coroutine per event. */
typedef struct {
    PyObject_HEAD
    PyObject *value;
} Ready;

static void
Ready_dealloc(Ready *self)
{
    Py_XDECREF(self->value);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Ready(value); Python twin: the coroutine BinlogStream._anext (source/_stream.py) that __anext__ returns without it */
static PyObject *
Ready_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *value;
    if (!PyArg_ParseTuple(args, "O:Ready", &value))
        return NULL;
    Ready *self = (Ready *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(value);
    self->value = value;
    return (PyObject *)self;
}

static PyObject *
Ready_await(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *
Ready_next(Ready *self)
{
    PyObject *value = self->value;
    if (value == NULL)
        return NULL; /* awaited twice: plain StopIteration */
    self->value = NULL;
    PyObject *exc = PyObject_CallOneArg(PyExc_StopIteration, value);
    Py_DECREF(value);
    if (exc == NULL)
        return NULL;
    PyErr_SetObject(PyExc_StopIteration, exc);
    Py_DECREF(exc);
    return NULL;
}

static PySendResult
Ready_send(Ready *self, PyObject *arg, PyObject **result)
{
    PyObject *value = self->value;
    self->value = NULL;
    *result = value != NULL ? value : Py_NewRef(Py_None);
    return PYGEN_RETURN;
}

static PyObject *
Ready_send_method(Ready *self, PyObject *arg)
{
    return Ready_next(self);
}

static PyObject *
Ready_throw(Ready *self, PyObject *args)
{
    PyObject *type, *value = NULL, *tb = NULL;
    if (!PyArg_ParseTuple(args, "O|OO:throw", &type, &value, &tb))
        return NULL;
    Py_CLEAR(self->value);
    if (PyExceptionInstance_Check(type))
        PyErr_SetObject((PyObject *)Py_TYPE(type), type);
    else
        PyErr_SetObject(type, value);
    return NULL;
}

static PyObject *
Ready_close(Ready *self, PyObject *unused)
{
    Py_CLEAR(self->value);
    Py_RETURN_NONE;
}

static PyMethodDef Ready_methods[] = {
    {"send", (PyCFunction)Ready_send_method, METH_O, NULL},
    {"throw", (PyCFunction)Ready_throw, METH_VARARGS, NULL},
    {"close", (PyCFunction)Ready_close, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyAsyncMethods Ready_async = {
    .am_await = Ready_await,
    .am_send = (sendfunc)Ready_send,
};

static PyTypeObject ReadyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mybinlog.protocol._speedups.Ready",
    .tp_basicsize = sizeof(Ready),
    .tp_dealloc = (destructor)Ready_dealloc,
    .tp_as_async = &Ready_async,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Ready_next,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Ready(value): an awaitable whose result is value, without suspending",
    .tp_methods = Ready_methods,
    .tp_new = Ready_new,
};

/* StreamIter(stream, pending, marks, slow): what BinlogStream.__aiter__ returns with the compiled core. Its __anext__
 * is BinlogStream.__anext__ in C: the next decoded event (popped from the `pending` deque, the stream's `_position`
 * moved when it is the event of the first of `marks`) as a Ready, without a Python frame; when none is decoded, the
 * coroutine slow() (BinlogStream._anext, which reads, waits and raises). An `async for` step cost 91 ns with a
 * Python __anext__ returning a Ready. */
typedef struct {
    PyObject_HEAD
    PyObject *stream, *popleft, *marks, *marks_popleft, *slow, *pending;
} StreamIter;

static int
StreamIter_traverse(StreamIter *self, visitproc visit, void *arg)
{
    Py_VISIT(self->stream);
    Py_VISIT(self->pending);
    Py_VISIT(self->popleft);
    Py_VISIT(self->marks);
    Py_VISIT(self->marks_popleft);
    Py_VISIT(self->slow);
    return 0;
}

static int
StreamIter_clear(StreamIter *self)
{
    Py_CLEAR(self->stream);
    Py_CLEAR(self->pending);
    Py_CLEAR(self->popleft);
    Py_CLEAR(self->marks);
    Py_CLEAR(self->marks_popleft);
    Py_CLEAR(self->slow);
    return 0;
}

static void
StreamIter_dealloc(StreamIter *self)
{
    PyObject_GC_UnTrack(self);
    StreamIter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
StreamIter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *stream, *pending, *marks, *slow;
    if (!PyArg_ParseTuple(args, "OOOO:StreamIter", &stream, &pending, &marks, &slow))
        return NULL;
    PyObject *popleft = PyObject_GetAttrString(pending, "popleft");
    if (popleft == NULL)
        return NULL;
    PyObject *marks_popleft = PyObject_GetAttrString(marks, "popleft");
    if (marks_popleft == NULL) {
        Py_DECREF(popleft);
        return NULL;
    }
    StreamIter *self = (StreamIter *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(popleft);
        Py_DECREF(marks_popleft);
        return NULL;
    }
    self->stream = Py_NewRef(stream);
    self->pending = Py_NewRef(pending);
    self->popleft = popleft;
    self->marks = Py_NewRef(marks);
    self->marks_popleft = marks_popleft;
    self->slow = Py_NewRef(slow);
    return (PyObject *)self;
}

static PyObject *
StreamIter_aiter(PyObject *self)
{
    return Py_NewRef(self);
}

/* StreamIter.__anext__; Python twin: BinlogStream.__anext__ (source/_stream.py) */
static PyObject *
StreamIter_anext(StreamIter *self)
{
    static PyObject *s_position = NULL;
    if (s_position == NULL && (s_position = PyUnicode_InternFromString("_position")) == NULL)
        return NULL;
    Py_ssize_t waiting = PyObject_Size(self->pending);
    if (waiting < 0)
        return NULL;
    if (waiting == 0)
        return PyObject_CallNoArgs(self->slow);
    PyObject *event = PyObject_CallNoArgs(self->popleft);
    if (event == NULL)
        return NULL;
    Py_ssize_t nmarks = PyObject_Size(self->marks);
    if (nmarks < 0)
        goto fail;
    if (nmarks > 0) {
        PyObject *first = PySequence_GetItem(self->marks, 0);
        if (first == NULL)
            goto fail;
        int is_mark = PyTuple_Check(first) && PyTuple_GET_SIZE(first) == 2 && PyTuple_GET_ITEM(first, 0) == event;
        Py_DECREF(first);
        if (is_mark) {
            PyObject *mark = PyObject_CallNoArgs(self->marks_popleft);
            if (mark == NULL)
                goto fail;
            int rc = PyObject_SetAttr(self->stream, s_position, PyTuple_GET_ITEM(mark, 1));
            Py_DECREF(mark);
            if (rc < 0)
                goto fail;
        }
    }
    Ready *ready = (Ready *)ReadyType.tp_alloc(&ReadyType, 0);
    if (ready == NULL)
        goto fail;
    ready->value = event; /* the reference popped */
    return (PyObject *)ready;
fail:
    Py_DECREF(event);
    return NULL;
}

static PyAsyncMethods StreamIter_async = {
    .am_aiter = StreamIter_aiter,
    .am_anext = (unaryfunc)StreamIter_anext,
};

static PyMethodDef StreamIter_methods[] = {
    {"__anext__", (PyCFunction)StreamIter_anext, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StreamIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mybinlog.protocol._speedups.StreamIter",
    .tp_basicsize = sizeof(StreamIter),
    .tp_dealloc = (destructor)StreamIter_dealloc,
    .tp_as_async = &StreamIter_async,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "StreamIter(stream, pending, marks, slow): BinlogStream's async iterator in C",
    .tp_traverse = (traverseproc)StreamIter_traverse,
    .tp_clear = (inquiry)StreamIter_clear,
    .tp_methods = StreamIter_methods,
    .tp_new = StreamIter_new,
};

/* active_indexes(events, passive) -> the indexes of the events whose type_code is not in `passive` (a set of ints
 * below 256): BinlogStream._track's scan of a batch, which queues the runs between them as they are (in Python, three
 * chained maps and a compress cost 75 ns an event) */
/* Python twin: the chained maps and compress of BinlogStream._track (source/_stream.py) */
PyObject *
mb_active_indexes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_Check(args[0]) || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "active_indexes(events: list, passive: frozenset)");
        return NULL;
    }
    static PyObject *s_type_code = NULL;
    if (s_type_code == NULL && (s_type_code = PyUnicode_InternFromString("type_code")) == NULL)
        return NULL;
    unsigned char passive[256] = {0};
    PyObject *it = PyObject_GetIter(args[1]), *key;
    if (it == NULL)
        return NULL;
    while ((key = PyIter_Next(it)) != NULL) {
        long code = PyLong_Check(key) ? PyLong_AsLong(key) : -1;
        Py_DECREF(key);
        if (code < 0 || code > 255) {
            Py_DECREF(it);
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "active_indexes: passive type codes are ints below 256");
            return NULL;
        }
        passive[code] = 1;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return NULL;
    PyObject *events = args[0], *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *code = PyObject_GetAttr(PyList_GET_ITEM(events, i), s_type_code);
        if (code == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        long c = PyLong_Check(code) ? PyLong_AsLong(code) : -1;
        Py_DECREF(code);
        if (c == -1 && PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        if (c >= 0 && c <= 255 && passive[c])
            continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(out, index) < 0) {
            Py_XDECREF(index);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(index);
    }
    return out;
}

int
mb_stream_init(PyObject *module)
{
    if (mb_add_type(module, "Ready", &ReadyType) < 0)
        return -1;
    return mb_add_type(module, "StreamIter", &StreamIterType);
}
