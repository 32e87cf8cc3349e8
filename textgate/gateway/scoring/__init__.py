"""One request from input to verdict, the same for every front end (``service.Service.run``):
normalize, route, Triton, re-score, policy, the steps after it, explanations, corrections.
"""
