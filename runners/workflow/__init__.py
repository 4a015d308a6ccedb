"""The workflow: the phase list both drivers walk (phases), the local driver, the Lambda
handler that Step Functions calls, the starter of cloud runs, a cloud run's status
(status), and the execution contract shared with the CDK construct (execution: function
names, timeouts, limits, input).

May import every room below it: measure, providers, results, cost, backends. Nothing
below imports the workflow.
"""
