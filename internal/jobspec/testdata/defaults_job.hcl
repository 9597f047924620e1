# Job identity and shape as Nomad's parser gives them: ID and Name both
# default to the block label (an `id` attribute does not rename the job);
# tasks written directly in the job become single-task groups placed before
# the group blocks; `crons = []` still marks the job as cron-periodic;
# region, namespace, type and priority stay unset for Canonicalize.
job "label" {
  id = "other-id"

  periodic {
    crons = []
  }

  group "second" {
    task "b" {
      driver = "exec"
    }
  }

  task "first" {
    driver = "exec"
  }

  task "also-first" {
    driver = "exec"
  }
}
