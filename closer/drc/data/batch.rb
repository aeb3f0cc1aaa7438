# Runs DRC scripts on layouts in one KLayout process, each job in a fresh DRC engine, the way
# `klayout -b -r SCRIPT -rd input=... -rd output=...` runs one: $input and $output are set, the
# script's text is evaluated by the engine. One line per job in $jobs:
#   SCRIPT<TAB>INPUT<TAB>OUTPUT<TAB>STATUS
# STATUS receives "ok" or "error<TAB>message"; a job that leaves no OUTPUT is an error too.
# The engine's _finish runs a full Ruby garbage collection (~0.2 s of KLayout's large heap) per
# job; Ruby's own incremental GC is enough for these small layouts and makes a job ~30x cheaper.
def GC.start(*args, **kwargs); end

File.readlines($jobs, chomp: true).each do |line|
  script, input, output, status = line.split("\t")
  $input = input
  $output = output
  message = nil
  begin
    engine = DRC::DRCEngine.new
    begin
      engine._start("closer drc")
      engine.instance_eval(File.read(script), script)
    ensure
      engine._finish
    end
  rescue Exception => exc
    message = "#{exc.class}: #{exc.message}".gsub(/\s+/, " ")[0, 400]
  end
  message ||= "no report database written" unless File.file?(output)
  File.write(status, message ? "error\t#{message}" : "ok")
end
