-- PATCH join: every request joins a distinct (federation, cluster) pair, so no request
-- conflicts with another: the pair space (federations x members) is split evenly between
-- wrk threads, and within a thread the pairs are walked federation-first, so requests in
-- flight at once land on different federations.
local feds, members = {}, {}
for line in io.lines(os.getenv("BENCH_FEDERATIONS")) do feds[#feds + 1] = line end
for line in io.lines(os.getenv("BENCH_MEMBERS")) do members[#members + 1] = line end
local counter = 0
local threads = 0

function setup(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end

function init(args)
  local share = math.floor(#feds * #members / 2)
  counter = thread_id * share
end

request = function()
  local fed = feds[(counter % #feds) + 1]
  local member = members[(math.floor(counter / #feds) % #members) + 1]
  counter = counter + 1
  local body = '[{"op": "add", "path": "/member_ids", "value": "' .. member .. '"}]'
  return wrk.format("PATCH", "/v1/federations/" .. fed, nil, body)
end
