-- Fair webhook claims (issue 26 item 8): the claim takes, per endpoint, its few oldest due
-- deliveries instead of the oldest of all tenants, so it reads one short index range per
-- endpoint rather than the whole due list.
CREATE INDEX webhook_deliveries_due_by_endpoint
    ON webhook_deliveries (endpoint_id, next_attempt_at, id) WHERE status = 'PENDING';
