#!/usr/bin/env python3
"""Deterministic workload with planted propensities, for evaluating the churn and conversion
scores (server/examples/propensity_eval.rs).

Every customer has two latent traits drawn at signup:
  engagement e ~ N(0, 1)  drives how often it acts (rate 0.12 * exp(0.8 e) events a day),
                          how long it stays (daily churn hazard 0.004 * exp(-e)) and, in the
                          35 days before it churns, a rate fading to 15% with support tickets
                          and the odd downgrade;
  intent     q ~ N(0, 1)  (correlated 0.4 with e) drives the share of buying signals among its
                          events (pricing, demo, trial: 4% * exp(0.9 q)) and its daily purchase
                          hazard (0.002 * exp(1.1 q)), raised for 14 days after a buying signal.
Churned customers stop acting for good. The traits are the ground truth: a customer's true
probabilities over any window follow from them, and the scores should rank customers the same
way.

Writes (default --out data/propensity):
  events.jsonl   events sorted by time: event, email, timestamp (ISO-8601 UTC, ms), channel,
                 optional campaignId
  truth.jsonl    one line per customer: email, engagement, intent, signup_day, churn_day
                 (null when still active at the end), purchase_days

Usage: python3 propensity.py [--customers 3000] [--days 240] [--seed 7] [--out DIR]
Standard library only.
"""
import argparse
import json
import math
import os
import random
from datetime import datetime, timedelta, timezone

END = datetime(2026, 10, 1, tzinfo=timezone.utc)
BROWSE = [  # (event, weight, channels)
    ("page_viewed", 40, ["web", "mobile_web"]),
    ("email_opened", 20, ["email"]),
    ("email_clicked", 8, ["email"]),
    ("app_login", 14, ["mobile_app"]),
    ("webinar_attended", 3, ["webinar"]),
    ("content_downloaded", 5, ["web"]),
]
INTENT = [("pricing_viewed", ["web"]), ("demo_requested", ["web", "sales"]),
          ("trial_started", ["web", "mobile_app"])]
FADE_DAYS = 35  # activity fades over this many days before a customer churns
CAMPAIGNS = ["spring-launch", "webinar-series", "retargeting", "onboarding-drip", "win-back"]


def pick(rng, table):
    total = sum(w for _, w, _ in table)
    x = rng.uniform(0, total)
    for name, w, channels in table:
        x -= w
        if x <= 0:
            return name, rng.choice(channels)
    name, _, channels = table[-1]
    return name, rng.choice(channels)


def poisson(rng, lam):
    # Knuth's method; lam stays small (a day's events).
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def customer(rng, idx, days):
    e = rng.gauss(0, 1)
    q = 0.4 * e + math.sqrt(1 - 0.16) * rng.gauss(0, 1)
    signup = rng.randrange(0, days - 30)
    churn_hazard = 0.004 * math.exp(-1.0 * e)
    churn_day = None
    for d in range(signup + 14, days):
        if rng.random() < churn_hazard:
            churn_day = d
            break
    email = f"p{idx:05d}@propensity.test"
    events, purchases = [], []
    last_intent = -999
    for d in range(signup, churn_day if churn_day is not None else days):
        rate = 0.12 * math.exp(0.8 * e)
        fading = churn_day is not None and churn_day - d <= FADE_DAYS
        if fading:
            rate *= 0.15 + 0.85 * (churn_day - d) / FADE_DAYS
        if d == signup:
            events.append((d, "signup", "web"))
        for _ in range(poisson(rng, rate)):
            if rng.random() < min(0.5, 0.04 * math.exp(0.9 * q)):
                name, channels = rng.choice(INTENT)
                events.append((d, name, rng.choice(channels)))
                last_intent = d
            else:
                name, channel = pick(rng, BROWSE)
                events.append((d, name, channel))
        if fading and rng.random() < 0.03:
            events.append((d, "support_ticket", "support"))
        elif fading and rng.random() < 0.01:
            events.append((d, "plan_downgraded", "web"))
        elif rng.random() < 0.002:
            events.append((d, "support_ticket", "support"))
        hazard = 0.002 * math.exp(1.1 * q) * (3.0 if d - last_intent <= 14 else 1.0)
        if rng.random() < min(0.2, hazard):
            events.append((d, "purchase", "web"))
            purchases.append(d)
    rows = []
    for d, name, channel in events:
        at = END - timedelta(days=days - d) + timedelta(seconds=rng.randrange(0, 86_400))
        row = {"event": name, "email": email, "channel": channel,
               "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"}
        if channel == "email" and rng.random() < 0.7:
            row["campaignId"] = rng.choice(CAMPAIGNS)
        rows.append(row)
    truth = {"email": email, "engagement": round(e, 4), "intent": round(q, 4),
             "signup_day": signup, "churn_day": churn_day, "purchase_days": purchases}
    return rows, truth


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--customers", type=int, default=3000)
    ap.add_argument("--days", type=int, default=240)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="data/propensity")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    events, truths = [], []
    for i in range(a.customers):
        rows, truth = customer(rng, i, a.days)
        events.extend(rows)
        truths.append(truth)
    events.sort(key=lambda r: r["timestamp"])
    with open(os.path.join(a.out, "events.jsonl"), "w") as f:
        for r in events:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    with open(os.path.join(a.out, "truth.jsonl"), "w") as f:
        for t in truths:
            f.write(json.dumps(t, separators=(",", ":")) + "\n")
    churned = sum(1 for t in truths if t["churn_day"] is not None)
    buyers = sum(1 for t in truths if t["purchase_days"])
    print(json.dumps({"customers": a.customers, "events": len(events), "churned": churned,
                      "buyers": buyers, "end": END.isoformat(), "days": a.days}))


if __name__ == "__main__":
    main()
