"""The Lua scripts of the Redis job queue (plugin/queue/redis_queue.py).

Every state change of a job is one of these scripts, so each transition is atomic across
all the processes that share the Redis: the receivers of ``serve`` (enqueue), the workers
(start, renew, finish) and their reapers (abandon, due). Keys are described in
redis_queue.py's docstring.
"""
from __future__ import annotations

__all__ = ["ENQUEUE", "START", "RENEW", "FINISH", "ABANDON", "DUE", "KEEP_JOBS", "JOB_TTL"]

#: Job records kept for ``/jobs`` and ``counts()`` (older hashes expire).
KEEP_JOBS = 1000
JOB_TTL = 7 * 24 * 3600

ENQUEUE = """
local pid, reason, action, payload, now, delay, maxa = ARGV[1], ARGV[2], ARGV[3], ARGV[4],
  tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
if action ~= '' then
  local eid = redis.call('INCR', 'lsa:event_seq')
  redis.call('RPUSH', 'lsa:events:' .. pid, cjson.encode({id=eid, action=action,
    payload=payload, received_at=now}))
end
local jid = redis.call('GET', 'lsa:pending:' .. pid)
if jid then
  local k = 'lsa:job:' .. jid
  redis.call('HINCRBY', k, 'events', 1)
  redis.call('HSET', k, 'last_reason', reason)
  -- an event is a reason to run soon: it overrides a retry's backoff
  if redis.call('HGET', k, 'wait') == 'delay' and now + delay < tonumber(redis.call('HGET', k, 'not_before')) then
    redis.call('ZREM', 'lsa:delayed', jid)
    redis.call('HSET', k, 'not_before', now + delay)
    if delay > 0 then
      redis.call('ZADD', 'lsa:delayed', now + delay, jid)
    else
      redis.call('HSET', k, 'wait', 'rq', 'handed_at', now)
      return {jid, 1}
    end
  end
  return {jid, 0}
end
jid = tostring(redis.call('INCR', 'lsa:job_seq'))
local k = 'lsa:job:' .. jid
redis.call('HSET', k, 'id', jid, 'project_id', pid, 'reason', reason, 'last_reason', reason,
  'events', 1, 'status', 'pending', 'attempts', 0, 'max_attempts', maxa,
  'not_before', now + delay, 'created_at', now)
redis.call('SET', 'lsa:pending:' .. pid, jid)
redis.call('LPUSH', 'lsa:jobs', jid)
local old = redis.call('LRANGE', 'lsa:jobs', %(keep)d, -1)
for _, o in ipairs(old) do redis.call('EXPIRE', 'lsa:job:' .. o, %(ttl)d) end
redis.call('LTRIM', 'lsa:jobs', 0, %(keep)d - 1)
if delay > 0 then
  redis.call('HSET', k, 'wait', 'delay')
  redis.call('ZADD', 'lsa:delayed', now + delay, jid)
  return {jid, 0}
end
redis.call('HSET', k, 'wait', 'rq', 'handed_at', now)
return {jid, 1}
""" % {"keep": KEEP_JOBS, "ttl": JOB_TTL}

# start(job) -> 'run' | 'busy' | 'skip'
START = """
local jid, token, lease, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local k = 'lsa:job:' .. jid
if redis.call('HGET', k, 'status') ~= 'pending' then return 'skip' end
-- a retry waiting for its backoff: the reaper hands it to RQ when it is due
if redis.call('HGET', k, 'wait') == 'delay' and tonumber(redis.call('HGET', k, 'not_before')) > now then
  return 'skip'
end
local pid = redis.call('HGET', k, 'project_id')
if not redis.call('SET', 'lsa:lock:' .. pid, token, 'NX', 'PX', lease) then
  redis.call('HSET', k, 'wait', 'lock')
  return 'busy'
end
if redis.call('GET', 'lsa:pending:' .. pid) == jid then redis.call('DEL', 'lsa:pending:' .. pid) end
redis.call('ZREM', 'lsa:delayed', jid)
redis.call('HSET', k, 'status', 'running', 'started_at', now, 'error', '', 'wait', '', 'token', token)
redis.call('HINCRBY', k, 'attempts', 1)
redis.call('HSET', 'lsa:running', pid, jid)
return 'run'
"""

RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

# After a job of project p stopped running (finished, failed or abandoned): the project's
# pending job waiting for the lock is handed to RQ. Returns its id or false.
_HANDOVER = """
local function handover(pid, now)
  local p = redis.call('GET', 'lsa:pending:' .. pid)
  if p and redis.call('HGET', 'lsa:job:' .. p, 'wait') == 'lock' then
    redis.call('HSET', 'lsa:job:' .. p, 'wait', 'rq', 'handed_at', now)
    return p
  end
  return false
end
"""

FINISH = _HANDOVER + """
local jid, token, ok, err, retry, now, backoff, maxb, res, path = ARGV[1], ARGV[2], ARGV[3],
  ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9], ARGV[10]
local k = 'lsa:job:' .. jid
local pid = redis.call('HGET', k, 'project_id')
if not pid then return {'gone', false} end
if redis.call('GET', 'lsa:lock:' .. pid) == token then redis.call('DEL', 'lsa:lock:' .. pid) end
if redis.call('HGET', k, 'status') ~= 'running' or redis.call('HGET', k, 'token') ~= token then
  return {'stale', handover(pid, now)}    -- recovered by a reaper meanwhile: keep its state
end
if redis.call('HGET', 'lsa:running', pid) == jid then redis.call('HDEL', 'lsa:running', pid) end
redis.call('HSET', k, 'finished_at', now, 'token', '')
if ok == '1' then
  redis.call('HSET', k, 'status', 'done', 'error', '', 'result', res, 'report_path', path)
  redis.call('EXPIRE', k, %(ttl)d)
  return {'done', handover(pid, now)}
end
local attempts, maxa = tonumber(redis.call('HGET', k, 'attempts')), tonumber(redis.call('HGET', k, 'max_attempts'))
local newer = redis.call('GET', 'lsa:pending:' .. pid)
if retry == '1' and attempts < maxa and not newer then
  local wait = math.min(maxb, backoff * 2 ^ (attempts - 1))
  redis.call('HSET', k, 'status', 'pending', 'not_before', now + wait, 'error', err, 'wait', 'delay')
  redis.call('SET', 'lsa:pending:' .. pid, jid)
  redis.call('ZADD', 'lsa:delayed', now + wait, jid)
  return {'pending', false}
end
if newer and retry == '1' and attempts < maxa then err = err .. ' (retry folded into job ' .. newer .. ')' end
redis.call('HSET', k, 'status', 'failed', 'error', err, 'result', res)
redis.call('EXPIRE', k, %(ttl)d)
return {'failed', handover(pid, now)}
""" % {"ttl": JOB_TTL}

# A running job whose lease ran out (its worker died): back to pending, or failed when its
# attempts are used up or another pending job covers it. Returns the job to hand to RQ.
ABANDON = _HANDOVER + """
local pid, now = ARGV[1], tonumber(ARGV[2])
if redis.call('EXISTS', 'lsa:lock:' .. pid) == 1 then return false end
local jid = redis.call('HGET', 'lsa:running', pid)
if not jid then return false end
redis.call('HDEL', 'lsa:running', pid)
local k = 'lsa:job:' .. jid
if redis.call('HGET', k, 'status') ~= 'running' then return handover(pid, now) end
local pending = redis.call('GET', 'lsa:pending:' .. pid)
local attempts, maxa = tonumber(redis.call('HGET', k, 'attempts')), tonumber(redis.call('HGET', k, 'max_attempts'))
redis.call('HSET', k, 'token', '', 'finished_at', now)
if attempts < maxa and not pending then
  redis.call('HSET', k, 'status', 'pending', 'not_before', now, 'wait', 'rq', 'handed_at', now,
    'error', 'interrupted: its worker stopped renewing the lease')
  redis.call('SET', 'lsa:pending:' .. pid, jid)
  return jid
end
local why = pending and ('interrupted; covered by job ' .. pending) or 'interrupted; no attempts left'
redis.call('HSET', k, 'status', 'failed', 'error', why)
return handover(pid, now)
"""

# Due retries: ids whose time came, taken by exactly one reaper.
DUE = """
local ids = redis.call('ZRANGEBYSCORE', 'lsa:delayed', '-inf', ARGV[1], 'LIMIT', 0, 100)
for _, j in ipairs(ids) do
  redis.call('ZREM', 'lsa:delayed', j)
  redis.call('HSET', 'lsa:job:' .. j, 'wait', 'rq', 'handed_at', ARGV[1])
end
return ids
"""
