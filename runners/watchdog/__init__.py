"""The watchdog: the scheduled sweep that deletes benchstack-tagged resources whose
expiry passed or whose run ended (sweep), what it lists (inventory), how it asks Step
Functions whether a run ended (runs), its audit and metric (report), its Lambda handler
and its CLI, and the teardown of one run on request (teardown).

May import: tags, regions, boto3 and the standard library. Never measurement, results,
providers or workflow: it must stop the meter even when those are broken.
"""
