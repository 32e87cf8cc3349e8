"""The mail protocols: spamd and milter on the one TCP listener, and the scanner they call.

``front.py`` is the room's door to the runtime (``Service.run``, the desk); ``marks.py``
renders a verdict as SpamAssassin-style points and headers; an error's ``kind`` becomes a
spamd code in ``spamd.CODES`` and a milter reply through ``milter.CANNOT_SCAN``.
"""
