"""``neuronfleet preflight``: check the real account before a deploy, with the user's credentials.

``needs`` (what a fleet file asks of the account: pure), ``quotas`` (the Service Quotas it is checked against, as
data with sources), ``checks`` (answers -> ok / warning / blocking lines with the fix: pure), ``account`` (the
thin boto3 adapter: one method per AWS call, errors kept as answers, never raised), ``commands`` (the CLI).
"""
