"""Drives a real Segment-protocol Python client against svcd (tests/tests/segment.rs).

Usage: python_client.py <segment|rudderstack> <host> <write key> <tag>
Sends the scenario of tests/tests/segment.rs with the library's own queue, batching, gzip,
retries and flushes, then exits 0 when the library reported no error.
"""
import datetime
import json
import sys

library, host, write_key, tag = sys.argv[1:5]
if library == "segment":
    from segment.analytics import Client
elif library == "rudderstack":
    from rudderstack.analytics import Client
else:
    sys.exit(f"unknown library {library}")

errors = []


def on_error(error, items):
    errors.append(f"{error!r} ({len(items)} messages)")


client = Client(
    write_key,
    host=host,
    gzip=True,
    max_retries=3,
    on_error=on_error,
    upload_size=3,
    upload_interval=0.1,
)

anon, user, old = f"{tag}-anon", f"{tag}-user", f"{tag}-old"
email, group = f"{tag}@example.com", f"{tag}-acme"
campaign = {"name": "spring", "source": "newsletter", "medium": "email"}

# An anonymous visitor browses.
client.page(anonymous_id=anon, category="Docs", name="Pricing",
            properties={"path": "/pricing"},
            context={"campaign": campaign, "userAgent": "Mozilla/5.0 (svc test)"},
            message_id=f"{tag}-m1")
client.track(anonymous_id=anon, event="Signup Started", properties={"plan": "pro"},
             message_id=f"{tag}-m2")
# The same person under an older user id.
client.track(user_id=old, event="Legacy Login", message_id=f"{tag}-m3")
client.flush()
# They sign up: identify links the visitor, alias the older id, group their company.
client.identify(user_id=user, anonymous_id=anon,
                traits={"email": email, "name": "Ada Lovelace", "plan": "pro"},
                message_id=f"{tag}-m4")
order = dict(user_id=user, event="Order Completed", properties={"revenue": 42.5, "sku": "SKU-1"},
             timestamp=datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
             message_id=f"{tag}-m5")
client.track(**order)
client.group(user_id=user, group_id=group, traits={"name": "Acme Inc", "industry": "Tools"},
             message_id=f"{tag}-m6")
client.alias(previous_id=old, user_id=user, message_id=f"{tag}-m7")
client.flush()
# The application retries the order (same messageId): deduplicated by the service.
client.track(**order)
client.flush()
client.shutdown()

print(json.dumps({"library": library, "errors": errors}))
sys.exit(1 if errors else 0)
