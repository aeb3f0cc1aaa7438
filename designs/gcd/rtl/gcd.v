// Greatest common divisor by repeated subtraction (Euclid), one step per cycle.
// Valid/ready request and response handshakes; the request carries both operands,
// {a, b} = req_msg. Written for Closer as its small default design.
module gcd #(
    parameter WIDTH = 16
) (
    input  wire               clk,
    input  wire               reset,
    input  wire               req_val,
    output wire               req_rdy,
    input  wire [2*WIDTH-1:0] req_msg,
    output wire               resp_val,
    input  wire               resp_rdy,
    output wire [WIDTH-1:0]   resp_msg
);
    localparam [1:0] IDLE = 2'd0, CALC = 2'd1, DONE = 2'd2;

    reg [1:0]       state;
    reg [WIDTH-1:0] a;
    reg [WIDTH-1:0] b;

    wire a_lt_b = a < b;
    wire b_zero = (b == {WIDTH{1'b0}});

    assign req_rdy  = (state == IDLE);
    assign resp_val = (state == DONE);
    assign resp_msg = a;

    always @(posedge clk) begin
        if (reset) begin
            state <= IDLE;
            a     <= {WIDTH{1'b0}};
            b     <= {WIDTH{1'b0}};
        end else begin
            case (state)
                IDLE: if (req_val) begin
                    a     <= req_msg[2*WIDTH-1:WIDTH];
                    b     <= req_msg[WIDTH-1:0];
                    state <= CALC;
                end
                CALC: begin
                    if (a_lt_b) begin
                        a <= b;
                        b <= a;
                    end else if (!b_zero) begin
                        a <= a - b;
                    end else begin
                        state <= DONE;
                    end
                end
                DONE: if (resp_rdy) state <= IDLE;
                default: state <= IDLE;
            endcase
        end
    end
endmodule
