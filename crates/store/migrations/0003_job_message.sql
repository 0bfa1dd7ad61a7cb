-- The stream message a running job was claimed through. A later delivery of the same job that
-- meets a live lease is then either that very message (reclaimed from a consumer that went
-- silent: keep it pending until the lease expires) or a duplicate (acknowledge it, so it
-- cannot pile up deliveries and be dead-lettered on behalf of a healthy job).
ALTER TABLE jobs ADD COLUMN message_id text;
