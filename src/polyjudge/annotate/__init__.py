"""Human annotation campaigns: MQM/ESA spans, DA scores, forced choice and response sets.

A campaign is a folder polyjudge owns (``campaign.sqlite`` in WAL mode plus the
items it was made from); ``annotate serve`` puts a small aiohttp application in
front of it. The pages in ``static/`` use the same JSON API a script would.
"""
