# update, migrate, reschedule, restart, disconnect (and the legacy group
# attributes it replaced), ephemeral_disk, shutdown_delay, max_run_duration.
job "strategies" {
  type        = "service"
  all_at_once = false
  node_pool   = "default"

  update {
    max_parallel      = 3
    health_check      = "checks"
    min_healthy_time  = "30s"
    healthy_deadline  = "10m"
    progress_deadline = "20m"
    auto_revert       = false
    auto_promote      = true
    canary            = 1
    stagger           = "45s"
  }

  migrate {
    max_parallel     = 2
    health_check     = "task_states"
    min_healthy_time = "5s"
    healthy_deadline = "1m30s"
  }

  reschedule {
    attempts       = 5
    interval       = "1h"
    delay          = "30s"
    delay_function = "exponential"
    max_delay      = "10m"
    unlimited      = false
  }

  group "modern" {
    count            = 0
    shutdown_delay   = "6s"
    max_run_duration = "2h"

    update {
      canary       = 0
      health_check = "manual"
    }

    restart {
      attempts         = 0
      interval         = "5m"
      delay            = "25s"
      mode             = "delay"
      render_templates = true
    }

    disconnect {
      lost_after = "6h"
      replace    = false
      reconcile  = "keep_original"
    }

    reschedule {
      delay_function = "fibonacci"
      unlimited      = true
    }

    ephemeral_disk {
      size    = 500
      sticky  = true
      migrate = false
    }

    task "t" {
      driver = "exec"
      restart {
        attempts = 1
      }
    }
  }

  group "stopping" {
    disconnect {
      stop_on_client_after = "90s"
    }
    task "t" {
      driver = "exec"
    }
  }

  group "legacy" {
    max_client_disconnect      = "1h"
    prevent_reschedule_on_lost = true
    task "t" {
      driver = "exec"
    }
  }
}
