-- POST /v1/federations with a fixed host cluster (BENCH_HOST).
local host = os.getenv("BENCH_HOST")
wrk.method = "POST"
wrk.body = '{"hostcluster_id": "' .. host .. '", "properties": {"dns-zone": "bench.example."}}'
