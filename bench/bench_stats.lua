--- bench_stats -- the statistics of the bench results: summaries
-- (median, quartiles, IQR), the Mann-Whitney U test, a bootstrap interval
-- of the ratio of medians, and the verdict `bench/runs.lua compare` prints.
-- Pure Lua, deterministic (the bootstrap has its own seeded generator), so
-- the same inputs give the same verdict on Lua 5.4 and LuaJIT.
local stats = {}

local function sorted(xs)
  local t = {}
  for i = 1, #xs do
    local v = xs[i]
    if type(v) ~= "number" or v ~= v then error("bench_stats: values must be numbers", 3) end
    t[i] = v
  end
  table.sort(t)
  return t
end

-- quantile q of a sorted list, linear between order statistics (R type 7)
local function quantile(t, q)
  local n = #t
  if n == 1 then return t[1] end
  local h = (n - 1) * q + 1
  local lo = math.floor(h)
  if lo >= n then return t[n] end
  return t[lo] + (h - lo) * (t[lo + 1] - t[lo])
end
stats.quantile = quantile

--- stats.median(xs) -> the median of a non-empty list
function stats.median(xs) return quantile(sorted(xs), 0.5) end

--- stats.summary(xs) -> { n, median, min, max, q1, q3, iqr } of a non-empty list
function stats.summary(xs)
  if #xs == 0 then error("bench_stats: no values", 2) end
  local t = sorted(xs)
  local q1, q3 = quantile(t, 0.25), quantile(t, 0.75)
  return { n = #t, median = quantile(t, 0.5), min = t[1], max = t[#t], q1 = q1, q3 = q3, iqr = q3 - q1 }
end

-- number of subsets of size m of the ranks 1..N with each rank sum
-- (the exact null distribution of the Wilcoxon rank sum, no ties)
local function ranksum_counts(m, N)
  local c = { [0] = { [0] = 1 } }
  for j = 1, m do c[j] = {} end
  for k = 1, N do
    for j = math.min(k, m), 1, -1 do
      local cj, cp = c[j], c[j - 1]
      for s, v in pairs(cp) do cj[s + k] = (cj[s + k] or 0) + v end
    end
  end
  return c[m]
end

local function normal_cdf(z)
  -- Abramowitz-Stegun 7.1.26 for erf (|error| < 1.5e-7)
  local x = math.abs(z) / math.sqrt(2)
  local t = 1 / (1 + 0.3275911 * x)
  local y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * math.exp(-x * x)
  return z >= 0 and 0.5 * (1 + y) or 0.5 * (1 - y)
end
stats.normal_cdf = normal_cdf

--- stats.mann_whitney(x, y) -> U (of x), two-sided p. Exact when there
-- are no ties and both samples have at most 30 values; otherwise the
-- normal approximation with the tie correction and a continuity correction.
function stats.mann_whitney(x, y)
  local n1, n2 = #x, #y
  if n1 == 0 or n2 == 0 then error("bench_stats: empty sample", 2) end
  local all = {}
  for i = 1, n1 do all[#all + 1] = { x[i], 1 } end
  for i = 1, n2 do all[#all + 1] = { y[i], 2 } end
  table.sort(all, function(a, b) return a[1] < b[1] end)
  local N = n1 + n2
  local r1, ties, i = 0, 0, 1
  while i <= N do
    local j = i
    while j < N and all[j + 1][1] == all[i][1] do j = j + 1 end
    local rank = (i + j) / 2
    local t = j - i + 1
    if t > 1 then ties = ties + t * t * t - t end
    for k = i, j do if all[k][2] == 1 then r1 = r1 + rank end end
    i = j + 1
  end
  local u = r1 - n1 * (n1 + 1) / 2
  local mu = n1 * n2 / 2
  if u == mu then return u, 1 end
  if ties == 0 and n1 <= 30 and n2 <= 30 then
    local counts = ranksum_counts(n1, N)
    local total, le, ge = 0, 0, 0
    local base = n1 * (n1 + 1) / 2
    for s, v in pairs(counts) do
      total = total + v
      local us = s - base
      if us <= u then le = le + v end
      if us >= u then ge = ge + v end
    end
    return u, math.min(1, 2 * math.min(le, ge) / total)
  end
  local var = n1 * n2 / 12 * ((N + 1) - ties / (N * (N - 1)))
  if var <= 0 then return u, 1 end
  local z = (math.abs(u - mu) - 0.5) / math.sqrt(var)
  if z < 0 then z = 0 end
  return u, math.min(1, 2 * (1 - normal_cdf(z)))
end

--- stats.bootstrap_ratio(base, new [, B, level]) -> lo, hi: the percentile
-- bootstrap interval (default 95 %, 2000 resamples) of
-- median(new) / median(base). Seeded: the same samples, the same interval.
function stats.bootstrap_ratio(base, new, B, level)
  B, level = B or 2000, level or 0.95
  local seed = 20261123
  local function rnd(n)
    seed = (seed * 48271) % 2147483647
    return seed % n + 1
  end
  local function resampled_median(xs)
    local t, n = {}, #xs
    for i = 1, n do t[i] = xs[rnd(n)] end
    table.sort(t)
    return quantile(t, 0.5)
  end
  local r = {}
  for b = 1, B do
    local mb = resampled_median(base)
    r[b] = mb ~= 0 and resampled_median(new) / mb or math.huge
  end
  table.sort(r)
  local a = (1 - level) / 2
  return quantile(r, a), quantile(r, 1 - a)
end

-- log Γ(x), x > 0 (Lanczos, g = 7: relative error below 1e-13)
local LANCZOS = { 0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
  -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7 }
local function lgamma(x)
  if x < 0.5 then return math.log(math.pi / math.abs(math.sin(math.pi * x))) - lgamma(1 - x) end
  x = x - 1
  local a, t = LANCZOS[1], x + 7.5
  for i = 1, 8 do a = a + LANCZOS[i + 1] / (x + i) end
  return 0.5 * math.log(2 * math.pi) + (x + 0.5) * math.log(t) - t + math.log(a)
end

-- P(0 <= T <= t) for Student's t with df degrees of freedom (Simpson)
local function t_half(t, df)
  local c = math.exp(lgamma((df + 1) / 2) - lgamma(df / 2)) / math.sqrt(df * math.pi)
  local function f(x) return c * (1 + x * x / df) ^ (-(df + 1) / 2) end
  local n = 2000
  local h = t / n
  local sum = f(0) + f(t)
  for i = 1, n - 1 do sum = sum + (i % 2 == 1 and 4 or 2) * f(i * h) end
  return sum * h / 3
end

local tq_cache = {}
--- stats.t_quantile(p, df) -> the p-quantile (p in [0.5, 1)) of Student's
-- t with df > 0 degrees of freedom (t_quantile(0.975, 2) = 4.303).
function stats.t_quantile(p, df)
  if not (p >= 0.5 and p < 1) or not (df > 0) then error("bench_stats: t_quantile needs 0.5 <= p < 1, df > 0", 2) end
  local key = p .. "/" .. df
  if tq_cache[key] then return tq_cache[key] end
  local lo, hi = 0, 1
  while t_half(hi, df) < p - 0.5 do hi = hi * 2 end
  for _ = 1, 60 do
    local mid = (lo + hi) / 2
    if t_half(mid, df) < p - 0.5 then lo = mid else hi = mid end
  end
  tq_cache[key] = (lo + hi) / 2
  return tq_cache[key]
end

--- stats.process_medians(values, tags) -> the median of each process's
-- values, in process order (tags: the process of each value, parallel to
-- values; nil: all one process).
function stats.process_medians(values, tags)
  if not tags then return { stats.median(values) } end
  if #tags ~= #values then error("bench_stats: one process tag per value", 2) end
  local by, order = {}, {}
  for i, v in ipairs(values) do
    local p = tags[i]
    if not by[p] then by[p] = {}; order[#order + 1] = p end
    table.insert(by[p], v)
  end
  table.sort(order)
  local out = {}
  for i, p in ipairs(order) do out[i] = stats.median(by[p]) end
  return out
end

--- stats.between(base_medians, new_medians [, alpha]) -> the
-- between-process test, or nil when it cannot be made (fewer than two
-- processes on both sides, or a median <= 0). On the log scale: delta =
-- mean log process median of new - that of base; s = the pooled standard
-- deviation of the log process medians within each run (df = kb - 1 +
-- kn - 1); band = t(1 - alpha/2, df) * s * sqrt(1/kb + 1/kn): a change of
-- the log median beyond the band is larger than the processes of one run
-- differ (Student's two-sample t test on the process medians). Returns
-- { delta, band, s, df, kb, kn }.
function stats.between(bm, nm, alpha)
  alpha = alpha or stats.defaults.alpha
  local function logs(t)
    local out, sum = {}, 0
    for i, v in ipairs(t) do
      if not (v > 0) then return nil end
      out[i] = math.log(v)
      sum = sum + out[i]
    end
    return out, sum / #out
  end
  local lb, mb = logs(bm)
  local ln, mn = logs(nm)
  if not lb or not ln then return nil end
  local df = (#lb - 1) + (#ln - 1)
  if df < 1 then return nil end
  local ss = 0
  for _, y in ipairs(lb) do ss = ss + (y - mb) ^ 2 end
  for _, y in ipairs(ln) do ss = ss + (y - mn) ^ 2 end
  local s = math.sqrt(ss / df)
  local band = stats.t_quantile(1 - alpha / 2, df) * s * math.sqrt(1 / #lb + 1 / #ln)
  return { delta = mn - mb, band = band, s = s, df = df, kb = #lb, kn = #ln }
end

stats.defaults = { alpha = 0.05, threshold = 0.10, min_effect = 0.05 }

--- stats.compare(base, new, opts) -> verdict table. base, new: lists of
-- values of one measure; opts.direction "lower" or "higher" (which is
-- better), opts.alpha (0.05), opts.threshold (0.10), opts.min_effect
-- (0.05), opts.base_tags, opts.new_tags (the process of each value, when
-- the run measured in several processes).
-- Returns { base = summary, new = summary, change (new/base median - 1),
-- cost (how much worse: + = slower; new/base - 1 for "lower", base/new - 1
-- for "higher"), p (Mann-Whitney), lo, hi (the interval of the ratio of
-- medians: the bootstrap interval), between (stats.between, or nil),
-- significant (the repetitions differ), verdict, regression }.
-- verdict: "faster" or "slower" when
--   * the repetitions differ significantly (Mann-Whitney p < alpha and the
--     bootstrap interval of the ratio of medians excludes 1),
--   * the change is larger than the processes of one run differ (the
--     between-process test: |delta| > band; skipped when neither run
--     recorded processes, e.g. format 1 documents),
--   * and it is at least min_effect;
-- otherwise "within noise". With one value per side (a deterministic
-- measure) there is no test: "same" when equal, else "faster"/"slower"
-- beyond min_effect. regression: "slower" (so beyond the processes'
-- spread), the bootstrap interval lies wholly beyond the threshold (for
-- "lower": lo > 1 + threshold; for "higher": hi < 1 / (1 + threshold))
-- and so does the processes' mean change exp(delta) (when recorded); for
-- single values, cost above threshold.
function stats.compare(base, new, opts)
  opts = opts or {}
  local dir = opts.direction or "lower"
  if dir ~= "lower" and dir ~= "higher" then
    error("bench_stats: direction must be 'lower' or 'higher'", 2)
  end
  local alpha = opts.alpha or stats.defaults.alpha
  local threshold = opts.threshold or stats.defaults.threshold
  local min_effect = opts.min_effect or stats.defaults.min_effect
  local sb, sn = stats.summary(base), stats.summary(new)
  local r = { base = sb, new = sn, direction = dir }
  if sb.median == 0 or sn.median == 0 then
    r.change = (sb.median == sn.median) and 0 or math.huge
  else
    r.change = sn.median / sb.median - 1
  end
  if sb.median > 0 and sn.median > 0 then
    r.cost = dir == "lower" and (sn.median / sb.median - 1) or (sb.median / sn.median - 1)
  else
    r.cost = (sb.median == sn.median) and 0 or ((dir == "lower") == (sn.median > sb.median) and math.huge or -math.huge)
  end
  local worse = r.cost > 0
  if #base == 1 or #new == 1 then
    r.p = nil
    if sb.median == sn.median then r.verdict = "same"
    elseif math.abs(r.cost) >= min_effect then r.verdict = worse and "slower" or "faster"
    else r.verdict = "within noise" end
  else
    local _, p = stats.mann_whitney(base, new)
    r.p = p
    if sb.median > 0 and sn.median > 0 then r.lo, r.hi = stats.bootstrap_ratio(base, new) end
    local excludes = r.lo and (r.lo > 1 or r.hi < 1)
    local bw = stats.between(stats.process_medians(base, opts.base_tags),
      stats.process_medians(new, opts.new_tags), alpha)
    r.between = bw
    local beyond = true
    if bw then beyond = math.abs(bw.delta) > bw.band end
    r.significant = p < alpha and excludes or false
    if r.significant and beyond and math.abs(r.cost) >= min_effect then
      r.verdict = worse and "slower" or "faster"
    else
      r.verdict = "within noise"
    end
  end
  -- a regression: slower, and significantly beyond the threshold (the
  -- whole interval of the ratio past it), not only its point estimate
  if r.verdict ~= "slower" then
    r.regression = false
  elseif r.lo then
    -- the repetitions' interval, and the processes' mean change, beyond it
    local q = r.between and math.exp(r.between.delta) or sn.median / sb.median
    if dir == "lower" then r.regression = r.lo > 1 + threshold and q > 1 + threshold
    else r.regression = r.hi < 1 / (1 + threshold) and q < 1 / (1 + threshold) end
  else
    r.regression = r.cost > threshold
  end
  return r
end

return stats
