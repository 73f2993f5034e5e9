-- Argo CD health check for urutau.io/CDCPipeline, the pipelines of an urutau fleet hub.
--
-- It reads the status the hub writes: status.observedGeneration (the generation applied to every
-- placed member), the conditions Ready, Reconciling, Stalled and Placed (each with the generation
-- it describes), status.terminated and status.clusters[] (one entry per member).
--
--   Healthy      Ready is True for the current generation and every member in status.clusters is
--                Ready: each placed member runs a ready coordinator.
--   Progressing  no status yet; the hub has not observed, or not finished applying, the current
--                generation; a coordinator is starting; the spec changed after a termination;
--                the pipeline is being deleted.
--   Degraded     status.terminated (for the current generation); Stalled; a member Degraded,
--                Unreachable or Terminated (named in the message); a placement that names
--                clusters or a selector but selects no member.
--   Suspended    placed nowhere on purpose: spec.placement is empty.
--
-- Plain Lua 5.1 using only the base and table libraries: that is all Argo CD opens for a script
-- configured in argocd-cm (no string, math or os functions, no string methods).

local function text(v)
  if v == nil then
    return ""
  end
  return tostring(v)
end

local function condition(conditionType)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == conditionType then
      return c
    end
  end
  return nil
end

-- isCurrent: something recorded with observedGeneration og describes the current generation. A
-- record without one cannot be placed in time and is taken at its word.
local function isCurrent(og)
  local generation = obj.metadata.generation
  return og == nil or generation == nil or og >= generation
end

local function placementEmpty()
  local p = obj.spec and obj.spec.placement
  if p == nil then
    return true
  end
  if p.clusters ~= nil and #p.clusters > 0 then
    return false
  end
  return p.clusterSelector == nil
end

local function members(keep)
  local out = {}
  if obj.status == nil or obj.status.clusters == nil then
    return out
  end
  for _, m in ipairs(obj.status.clusters) do
    if keep(m.phase) then
      local s = text(m.name) .. " is " .. text(m.phase)
      if m.message ~= nil and m.message ~= "" then
        s = s .. " (" .. text(m.message) .. ")"
      end
      table.insert(out, s)
    end
  end
  return out
end

local function result(status, message)
  return { status = status, message = message }
end

local function health()
  local generation = obj.metadata.generation
  local st = obj.status

  -- Argo CD itself reports "Pending deletion" before it runs a health script; this is for the
  -- other readers of this script.
  if obj.metadata.deletionTimestamp ~= nil then
    local from = "every member in status.inventory"
    if st ~= nil and st.inventory ~= nil and #st.inventory > 0 then
      from = table.concat(st.inventory, ", ")
    end
    return result("Progressing", "Deleting: the hub is removing the coordinator workload from " .. from)
  end

  if st == nil then
    return result("Progressing", "Waiting for the hub to report status")
  end

  local t = st.terminated
  if t ~= nil then
    local where = "the hub"
    if t.cluster ~= nil and t.cluster ~= "" then
      where = "cluster " .. text(t.cluster)
    end
    if not isCurrent(t.observedGeneration) then
      return result("Progressing", "The spec changed after the termination (" .. text(t.reason) .. " on " .. where ..
        "): waiting for the hub to clear it and roll out generation " .. text(generation))
    end
    local msg = "Terminated (" .. text(t.reason) .. ") on " .. where
    if t.message ~= nil and t.message ~= "" then
      msg = msg .. ": " .. text(t.message)
    end
    return result("Degraded", msg .. ". No member is written until status.terminated is removed or the spec changes")
  end

  local stalled = condition("Stalled")
  if stalled ~= nil and stalled.status == "True" and isCurrent(stalled.observedGeneration) then
    return result("Degraded", "Stalled: " .. text(stalled.message))
  end

  local ready = condition("Ready")
  if ready == nil then
    return result("Progressing", "Waiting for the hub to report status")
  end
  if not isCurrent(ready.observedGeneration) then
    return result("Progressing", "Waiting for the hub to observe generation " .. text(generation) ..
      " (status describes generation " .. text(ready.observedGeneration) .. ")")
  end

  local failing = members(function(phase)
    return phase == "Degraded" or phase == "Unreachable" or phase == "Terminated"
  end)
  if #failing > 0 then
    return result("Degraded", "Coordinator failing: " .. table.concat(failing, "; "))
  end

  local placed = condition("Placed")
  if placed ~= nil and placed.status == "False" and isCurrent(placed.observedGeneration) then
    if placementEmpty() then
      return result("Suspended", "Placed nowhere: spec.placement is empty, so no member cluster runs this pipeline")
    end
    return result("Degraded", "Placed nowhere: " .. text(placed.message))
  end

  local reconciling = condition("Reconciling")
  local detail = ready.message
  if reconciling ~= nil and reconciling.status == "True" then
    detail = reconciling.message
  end

  local og = st.observedGeneration
  if generation ~= nil and (og == nil or og < generation) then
    local msg = "Rolling out generation " .. text(generation)
    if og ~= nil and og > 0 then
      msg = msg .. " (generation " .. text(og) .. " is the last applied everywhere)"
    end
    return result("Progressing", msg .. ": " .. text(detail))
  end

  if reconciling ~= nil and reconciling.status == "True" then
    return result("Progressing", text(reconciling.message))
  end

  if ready.status == "True" then
    local waiting = members(function(phase)
      return phase ~= "Ready"
    end)
    if #waiting > 0 then
      return result("Progressing", "Waiting for the coordinator: " .. table.concat(waiting, "; "))
    end
    return result("Healthy", text(ready.message))
  end

  return result("Progressing", text(ready.message))
end

return health()
