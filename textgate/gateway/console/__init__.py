"""The review console (``/ui/``): its pages and API, sign-in sessions, the live panel.

Decisions are written by the review store's transaction (``records/review_records.py``);
explanations come from the runtime's desk (``scoring/desk.py``).
"""
