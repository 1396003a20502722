"""The sans-IO layer: bytes in, events out. No sockets, no asyncio, no threads, no clients of any server.

``_reader``/``_values``/``_jsonb`` decode field and column values; ``_table`` holds table maps and generates the
per-table row decoders; ``_events`` defines the event classes; ``_decoder`` turns event bytes into events
(:class:`~mybinlog.EventDecoder`); ``_gtid`` holds GTID sets of both flavours; ``_position`` tracks transaction
boundaries in a sequence of events (:class:`~mybinlog.BinlogPosition`); ``_transaction`` groups events into whole
transactions (:class:`~mybinlog.Transaction`); ``_format`` renders events as text or JSON Lines (``mybinlog dump``);
``_packets`` cuts a server's byte stream into MySQL packets (headers, sequence ids, 16 MiB continuations, EOF/ERR).

Layer rules: may import :mod:`mybinlog.errors` and the standard library only (zstandard for compressed events).
A test (tests/unit/test_public_api.py) checks that importing it pulls in no asyncio, socket or client library.
"""
