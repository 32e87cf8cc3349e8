"""What a request leaves behind: events (outbox, publisher), the review store, the replay
store, metrics and logs. The lowest room: it imports none of the others.
"""
