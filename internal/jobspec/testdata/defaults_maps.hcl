# Free-form maps as Nomad's parser gives them. meta (job, group, task) and
# env may be written as an attribute as well as a block; values become
# strings. In an opaque map (task config, scaling policy, ...) an object
# written out as `{ ... }` is a one-element list of maps, like a block,
# also inside nested blocks; an object from an expression stays a map;
# whole numbers are integers, the rest floats.
locals {
  labels = { team = "a" }
}

job "maps" {
  meta = {
    "key.with.dots" = "v"
    n               = 1
  }

  group "g" {
    meta = {
      flag = true
    }

    task "t" {
      driver = "docker"
      meta {
        block = "form"
      }
      env = {
        "A.B" = "1"
        C     = 2
      }
      config {
        image       = "app"
        labels      = { tier = "web" }
        empty       = {}
        from_local  = local.labels
        list_of_obj = [{ a = 1 }]
        int         = 3
        big         = 21474836470
        float       = 1.5
        mount {
          type    = "bind"
          options = { ro = true }
        }
      }
    }
  }
}
