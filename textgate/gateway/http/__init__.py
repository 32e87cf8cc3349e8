"""The HTTP front end: routes, middleware, the front door, and HTTP's error table.

Renders what the runtime answers as HTTP; an error's ``kind`` becomes a status in
``http_errors.py`` and nowhere else.
"""
