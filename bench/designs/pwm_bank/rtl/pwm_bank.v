// pwm_bank: CHANNELS PWM outputs of WIDTH bits sharing one prescaler and one period counter.
// Duty values are written over a small register bus into shadow registers and copied into the
// active registers all at once by `commit` (double buffering: one enable net on every active
// bit); `enable` gates the counter and every output (a second wide fan-out net). Synchronous,
// active-high reset. Written for bench/flow_scaling.py as a design the flow was not tuned on.
module pwm_bank #(
    parameter CHANNELS = 8,
    parameter WIDTH = 8
) (
    input  wire                clk,
    input  wire                rst,
    input  wire                enable,
    input  wire [3:0]          prescale,      // the counter advances every prescale+1 clocks
    input  wire                we,
    input  wire [2:0]          addr,
    input  wire [WIDTH-1:0]    wdata,
    input  wire                commit,
    output reg  [CHANNELS-1:0] pwm,
    output wire                period_start
);
    reg [3:0]                  pre;
    reg [WIDTH-1:0]            count;
    reg [CHANNELS*WIDTH-1:0]   shadow;
    reg [CHANNELS*WIDTH-1:0]   active;
    wire                       tick = enable && (pre == prescale);

    assign period_start = tick && (count == {WIDTH{1'b1}});

    always @(posedge clk) begin
        if (rst) begin
            pre <= 4'd0;
            count <= {WIDTH{1'b0}};
        end else if (enable) begin
            pre <= tick ? 4'd0 : pre + 4'd1;
            if (tick)
                count <= count + 1'b1;
        end
    end

    integer ch;
    always @(posedge clk) begin
        if (rst) begin
            shadow <= {(CHANNELS*WIDTH){1'b0}};
            active <= {(CHANNELS*WIDTH){1'b0}};
            pwm <= {CHANNELS{1'b0}};
        end else begin
            for (ch = 0; ch < CHANNELS; ch = ch + 1)
                if (we && addr == ch[2:0])
                    shadow[ch*WIDTH +: WIDTH] <= wdata;
            if (commit)
                active <= shadow;
            for (ch = 0; ch < CHANNELS; ch = ch + 1)
                pwm[ch] <= enable && (count < active[ch*WIDTH +: WIDTH]);
        end
    end
endmodule
