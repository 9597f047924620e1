# job attributes, ui, multiregion, meta at every level, env.
job "meta" {
  region      = "eu"
  namespace   = "team-a"
  type        = "system"
  priority    = 0
  all_at_once = true
  datacenters = ["eu-*"]

  ui {
    description = "The **meta** job"
    link {
      label = "Runbook"
      url   = "https://example.com/runbook"
    }
  }

  multiregion {
    strategy {
      max_parallel = 1
      on_failure   = "fail_all"
    }
    region "eu" {
      count       = 2
      datacenters = ["eu-1"]
      node_pool   = "edge"
      meta {
        tier = "1"
      }
    }
  }

  meta {
    team  = "a"
    count = 3
    flag  = true
  }

  group "g" {
    meta {
      g = "1"
    }
    task "t" {
      driver = "exec"
      meta {
        t = "x"
      }
      env {
        EMPTY = ""
        NUM   = 42
      }
    }
  }
}
